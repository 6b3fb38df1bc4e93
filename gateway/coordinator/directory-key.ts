// A coordinator's directory key (DESIGN §11): an Ed25519 key made in its data dir the first time it runs on NATS
// (0600, like an agent's identity), with which it signs every message it publishes there. Gateways on NATS list its
// public half in --coordinator-keys (`svc-gateway directory-key` prints it), and take no coordinator message without it.
import { Signer } from "../../src/crypto/signing.ts";
import { seedFile } from "../../src/process/seed-file.ts";

export const DIRECTORY_KEY_FILE = "directory-key";

/** The data dir's directory key, made (a 32-byte seed in hex, 0600) when there is none yet. */
export function directoryKey(dataDir: string): Signer {
  return Signer.fromSeed(Buffer.from(seedFile(dataDir, DIRECTORY_KEY_FILE, "an svc directory key"), "hex"));
}
