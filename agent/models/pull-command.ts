// How to get a catalog model's missing file, as `catalog` and `doctor` suggest it: `svc-agent pull` only where
// that command would fetch it into the place looked at, so neither ever suggests a command that fails.
import { resolve } from "node:path";
import type { CatalogEntry } from "../../src/catalog.ts";
import { loadCatalog } from "../../src/catalog-file.ts";
import { DEFAULT_MODELS_DIR } from "./models-dir.ts";
import type { ModelStore } from "./store.ts";

/** The same pin: the same bytes from the same hub file at the same revision. */
const samePin = (a: CatalogEntry, b: CatalogEntry) => a.hub_id === b.hub_id && a.file === b.file && a.revision === b.revision && a.sha256 === b.sha256;

/**
 * `svc-agent pull ALIAS [--models-dir DIR]` when pull, which reads the bundled catalog, pins this alias the same
 * way and would put the file where the store looks; otherwise undefined (a demo or test catalog's models are on
 * no hub, and a `--model` file lives where pull does not write).
 */
export function pullCommand(store: ModelStore, alias: string): string | undefined {
  const entry = store.entry(alias);
  const bundled = loadCatalog().models.find((m) => m.alias === alias);
  if (bundled === undefined || !samePin(bundled, entry) || resolve(store.pathFor(alias)) !== resolve(store.modelsDir, entry.file)) return undefined;
  return `svc-agent pull ${alias}${resolve(store.modelsDir) === resolve(DEFAULT_MODELS_DIR) ? "" : ` --models-dir ${store.modelsDir}`}`;
}
