// Admission before costly work (SPEC §8), on every route: the caller is authenticated and within its rate limits
// already; before the body's costly parse (its schemas, a big body's validation), the gateway's copy of the directory
// must show a provider that could take the request with room in its queue. Reads only the body's peek (model, pin);
// anything odd in them is left to the parser.
import { resolveModel, type Catalog, type CatalogEntry } from "../../src/catalog.ts";
import { ApiError } from "../../src/errors.ts";
import { PIN } from "../../src/openai/chat-request.ts";
import type { RoutePeek } from "../../src/openai/route-request.ts";
import type { RouteKind } from "../../src/openai/route-kinds.ts";
import type { TrustLevel } from "../../src/receipt/rungs.ts";
import type { Directory } from "../directory/directory.ts";

/** Throws the 503 a request would meet in the full queues before any costly work is done. */
export function admitBeforeWork(kind: RouteKind, peek: RoutePeek, gateway: { catalog: Catalog; directory: Directory; floor: TrustLevel }): void {
  const route = routeOf(kind, peek, gateway.catalog);
  if (route === undefined) return;
  try {
    gateway.directory.admit({ ...route, floor: gateway.floor });
  } catch (err) {
    // no provider for it, or a pin that names none: the parser's faults come first, then routing's answer as ever
    if (!(err instanceof ApiError) || err.code === "overloaded") throw err;
  }
}

/** Where the request would go, when its `model` and pin read plainly; undefined leaves every fault to the parser. */
function routeOf(kind: RouteKind, { model, pin }: RoutePeek, catalog: Catalog): { entry: CatalogEntry; pin?: string } | undefined {
  // chat's default alias stands in for an absent model; the other routes require one
  const named = model ?? (kind === "chat" || kind === "responses" ? catalog.default : undefined);
  if (named === undefined || (pin !== undefined && !PIN.test(pin))) return undefined;
  let entry: CatalogEntry;
  try {
    entry = resolveModel(catalog, named, kind === "embeddings" ? "embedding" : "chat");
  } catch (err) {
    if (err instanceof ApiError) return undefined;
    throw err;
  }
  return pin === undefined ? { entry } : { entry, pin };
}
