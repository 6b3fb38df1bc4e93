// Where downloaded models live unless `--models-dir` says otherwise: apart from the store, so that the command line
// names the default without loading the catalog's parsing.
import { join } from "node:path";
import { DEFAULT_DATA_DIR } from "../../src/process/data-dir.ts";

export const DEFAULT_MODELS_DIR = join(DEFAULT_DATA_DIR, "models");
