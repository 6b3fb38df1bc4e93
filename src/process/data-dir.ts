// Where svc keeps its state by default: the agent's keys and models, and the gateway's key store beneath it.
import os from "node:os";
import { join } from "node:path";

export const DEFAULT_DATA_DIR = join(os.homedir(), ".svc");
