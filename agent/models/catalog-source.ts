// Where an agent command reads the catalog from: a running coordinator (`--coordinator URL`), a file
// (`--catalog FILE`), or the bundled `models.lock.json`.
import { catalogFromBody, CatalogError, type Catalog } from "../../src/catalog.ts";
import { loadCatalog } from "../../src/catalog-file.ts";

export async function fetchCatalog(coordinatorUrl: string): Promise<Catalog> {
  const url = new URL("/v1/catalog", coordinatorUrl).toString();
  let response: Response;
  try {
    response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  } catch (err) {
    const cause = (err as Error & { cause?: Error }).cause;
    throw new CatalogError(`cannot reach the coordinator at ${url}: ${cause?.message ?? (err as Error).message}`);
  }
  if (!response.ok) throw new CatalogError(`GET ${url} answered ${response.status} ${response.statusText}`);
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    throw new CatalogError(`GET ${url} did not return JSON`);
  }
  return catalogFromBody(body, url);
}

export async function catalogFrom(options: { catalog?: string; coordinator?: string }): Promise<Catalog> {
  if (options.coordinator !== undefined) return fetchCatalog(options.coordinator);
  return loadCatalog(options.catalog);
}
