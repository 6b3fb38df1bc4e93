// Admission before costly work (SPEC §8): the caller is authenticated and within its rate limits already; before
// the body's schemas are prepared, the gateway's copy of the directory must show a provider that could take the
// request with room in its queue. Reads only `model` and the pin, cheaply; anything odd in them is left to the parser.
import { resolveModel, type Catalog, type CatalogEntry } from "../../src/catalog.ts";
import { ApiError } from "../../src/errors.ts";
import type { Directory } from "../directory/directory.ts";
import type { TrustLevel } from "../../src/receipt/rungs.ts";
import { PIN } from "./chat-request.ts";

/** Throws the 503 a request would meet in the full queues before any schema work is done. */
export function admitBeforeWork(body: unknown, gateway: { catalog: Catalog; directory: Directory; floor: TrustLevel }): void {
  const route = routeOf(body, gateway.catalog);
  if (route === undefined) return;
  try {
    gateway.directory.admit({ ...route, floor: gateway.floor });
  } catch (err) {
    // no provider for it, or a pin that names none: the parser's faults come first, then routing's answer as ever
    if (!(err instanceof ApiError) || err.code === "overloaded") throw err;
  }
}

/** Where the request would go, when its `model` and pin read plainly; undefined leaves every fault to the parser. */
function routeOf(body: unknown, catalog: Catalog): { entry: CatalogEntry; pin?: string } | undefined {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return undefined;
  const { model, provider, provider_key_id: keyId } = body as Record<string, unknown>;
  const named = model ?? catalog.default;
  const pin = provider ?? keyId ?? undefined;
  if (typeof named !== "string" || (pin !== undefined && (typeof pin !== "string" || !PIN.test(pin.toLowerCase())))) return undefined;
  let entry: CatalogEntry;
  try {
    entry = resolveModel(catalog, named);
  } catch (err) {
    if (err instanceof ApiError) return undefined;
    throw err;
  }
  return pin === undefined ? { entry } : { entry, pin: pin.toLowerCase() };
}
