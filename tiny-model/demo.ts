// The demo models and catalog `npm start` and `npm run demo` serve when no catalog model is downloaded: a
// deterministic tiny random-weight qwen3 for chat and one for embeddings under DATA_DIR/demo, so both write the same
// bytes, and every route can be tried.
import { join } from "node:path";
import { PRIVATE_DIR_MODE } from "../src/process/file-modes.ts";
import { makeDirs } from "../src/process/make-dir.ts";
import { writeTinyCatalog, type WrittenTinyCatalog } from "./catalog.ts";

export const DEMO_ALIAS = "tiny-random";
/** The demo's embedding model, for POST /v1/embeddings. */
export const DEMO_EMBEDDING_ALIAS = "tiny-embed";

export function writeDemoCatalog(dataDir: string): WrittenTinyCatalog {
  // the data dir will hold the agent's keys: made here first, it is made private as the agent would make it
  makeDirs(dataDir, PRIVATE_DIR_MODE);
  return writeTinyCatalog(
    join(dataDir, "demo"),
    [
      { alias: DEMO_ALIAS, seed: 7, endOfTurn: "sometimes" },
      { alias: DEMO_EMBEDDING_ALIAS, seed: 3, kind: "embedding" },
    ],
    "svc-demo",
  );
}
