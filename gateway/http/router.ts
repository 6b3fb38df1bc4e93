// The one route table of every HTTP server here (the API, the settings pages, /verify, the operator endpoints, the
// coordinator): a path, exact or a pattern, with a handler per method. Any other path is a 404, and a known path
// asked with another method a 405 whose Allow header lists the methods it takes (RFC 9110 §15.5.6).
import type { ServerResponse } from "node:http";
import { ApiError } from "../../src/errors.ts";

export interface Route<H> {
  /** The log's name for the route (a pattern, never the raw path). */
  name: string;
  /** The path itself, or a pattern whose first group, if it has one, is the route's parameter. */
  path: string | RegExp;
  methods: Readonly<Record<string, H>>;
}

export interface Matched<H> {
  name: string;
  handler: H;
  /** The pattern's first group, percent-decoded; "" for an exact path. */
  param: string;
}

export class Router<H> {
  constructor(
    private readonly routes: readonly Route<H>[],
    /** The 404's message: a server may point the caller somewhere of its own. */
    private readonly notFound: (method: string, path: string) => string = (method, path) => `No route ${method} ${path}.`,
  ) {}

  /** The route a request names, or throws 404 route_not_found or 405 method_not_allowed (setting `allow` on `res`). */
  resolve(method: string, path: string, res: ServerResponse): Matched<H> {
    for (const route of this.routes) {
      const param = match(route.path, path);
      if (param === undefined) continue;
      if (!Object.hasOwn(route.methods, method)) {
        const allowed = Object.keys(route.methods).join(", ");
        res.setHeader("allow", allowed);
        throw new ApiError("method_not_allowed", `${method} is not allowed on ${route.name}; use ${allowed}.`);
      }
      return { name: route.name, handler: route.methods[method]!, param };
    }
    throw new ApiError("route_not_found", this.notFound(method, path));
  }
}

/** A resource that is only read: HEAD as GET (node sends the head alone, with the length the body would have had). */
export const readable = <H>(handler: H): Record<string, H> => ({ GET: handler, HEAD: handler });

function match(pattern: string | RegExp, path: string): string | undefined {
  if (typeof pattern === "string") return pattern === path ? "" : undefined;
  const found = pattern.exec(path);
  if (found === null) return undefined;
  try {
    return decodeURIComponent(found[1] ?? "");
  } catch {
    return found[1]!;
  }
}
