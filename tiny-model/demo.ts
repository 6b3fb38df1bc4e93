// The demo model and catalog `npm start` and `npm run demo` serve when no catalog model is downloaded: one
// deterministic tiny random-weight qwen3 under DATA_DIR/demo, so both write the same bytes.
import { join } from "node:path";
import { writeTinyCatalog, type WrittenTinyCatalog } from "./catalog.ts";

export const DEMO_ALIAS = "tiny-random";

export function writeDemoCatalog(dataDir: string): WrittenTinyCatalog {
  return writeTinyCatalog(join(dataDir, "demo"), [{ alias: DEMO_ALIAS, seed: 7, endOfTurn: "sometimes" }], "svc-demo");
}
