// Reading a catalog file (models.lock.json, or the one `--catalog` names) for the gateway, the agent and the scripts;
// apart from src/catalog.ts so that the parsing a caller's client runs imports no node: module.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { CatalogError, parseCatalog, type Catalog } from "./catalog.ts";
import { PACKAGE_ROOT } from "./process/package-root.ts";

export const BUNDLED_CATALOG_PATH = join(PACKAGE_ROOT, "models.lock.json");

export function loadCatalog(path: string = BUNDLED_CATALOG_PATH): Catalog {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new CatalogError(`${path}: cannot read (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new CatalogError(`${path}: not valid JSON (${(err as Error).message})`);
  }
  return parseCatalog(json, path);
}
