// The catalog whose pins a sealed fetch holds receipts to unless the caller gives its own: svc's models.lock.json,
// bundled as JSON so that no runtime needs a file system to read it.
import lock from "../models.lock.json" with { type: "json" };
import { parseCatalog, type Catalog } from "../src/catalog.ts";

export const BUNDLED_CATALOG: Catalog = parseCatalog(lock, "models.lock.json");
