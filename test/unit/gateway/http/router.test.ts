// The one route table (gateway/http/router.ts) that the API, the settings pages, /verify, the operator endpoints and
// the coordinator all answer through: 404 route_not_found for an unknown path, 405 method_not_allowed with an Allow
// header for a known path asked with another method (RFC 9110 §15.5.6), in the SPEC §2.7 envelope.
import type { ServerResponse } from "node:http";
import { describe, expect, it } from "vitest";
import { Router } from "../../../../gateway/http/router.ts";
import { resolvePage } from "../../../../gateway/web/routes.ts";
import { catchApiError } from "../../../fixtures/api-error.ts";

/** The one part of a response the router touches: its headers. */
function response(): { res: ServerResponse; headers: Record<string, unknown> } {
  const headers: Record<string, unknown> = {};
  const res = { setHeader: (name: string, value: unknown) => (headers[name] = value) } as unknown as ServerResponse;
  return { res, headers };
}

const router = new Router<string>(
  [
    { name: "/v1/models", path: "/v1/models", methods: { GET: "list" } },
    { name: "/v1/models/{id}", path: /^\/v1\/models\/([^/]+)$/, methods: { GET: "one", DELETE: "drop" } },
  ],
  (method, path) => `No route ${method} ${path}.`,
);

describe("Routes: matching", () => {
  it("an exact path, and a pattern whose group is the percent-decoded parameter (left as sent when it does not decode)", () => {
    expect(router.resolve("GET", "/v1/models", response().res)).toEqual({ name: "/v1/models", handler: "list", param: "" });
    expect(router.resolve("DELETE", "/v1/models/qwen%2F3", response().res)).toEqual({ name: "/v1/models/{id}", handler: "drop", param: "qwen/3" });
    expect(router.resolve("GET", "/v1/models/%E0%A4%A", response().res).param).toBe("%E0%A4%A");
  });
});

describe("Routes: 404 and 405", () => {
  it("an unknown path is 404 route_not_found with the server's own message, and sets no Allow", () => {
    const { res, headers } = response();
    const error = catchApiError(() => router.resolve("GET", "/v1/models/a/b", res));
    expect(error.toEnvelope()).toEqual({
      error: { message: "No route GET /v1/models/a/b.", type: "invalid_request_error", code: "route_not_found", param: null, svc_action: "fix_request" },
    });
    expect(error.status).toBe(404);
    expect(headers).toEqual({});
  });

  it("another method is 405 method_not_allowed, and Allow lists the route's methods", () => {
    const { res, headers } = response();
    const error = catchApiError(() => router.resolve("POST", "/v1/models/x", res));
    expect([error.status, error.code, error.message]).toEqual([405, "method_not_allowed", "POST is not allowed on /v1/models/{id}; use GET, DELETE."]);
    expect(headers).toEqual({ allow: "GET, DELETE" });
  });

  it("a method named like an object's own property is no route's method", () => {
    expect(catchApiError(() => router.resolve("constructor", "/v1/models", response().res)).code).toBe("method_not_allowed");
  });

  it("the settings pages: an asset is read with GET or HEAD only, the settings page with GET, any other page path is 404", () => {
    const asset = response();
    expect(catchApiError(() => resolvePage(undefined, "POST", "/settings/assets/settings.css", asset.res)).status).toBe(405);
    expect(asset.headers).toEqual({ allow: "GET, HEAD" });
    const settings = response();
    expect(catchApiError(() => resolvePage(undefined, "POST", "/settings/", settings.res)).status).toBe(405);
    expect(settings.headers).toEqual({ allow: "GET" });
    expect(catchApiError(() => resolvePage(undefined, "GET", "/settings/nope", response().res)).code).toBe("route_not_found");
    expect(resolvePage(undefined, "HEAD", "/settings/assets/settings.js", response().res).name).toBe("/settings/assets/{file}");
  });

  it("without sign-in configured, the sign-in pages are found but answer sign_in_not_configured", async () => {
    const page = resolvePage(undefined, "GET", "/auth/login", response().res);
    await expect(page.serve({} as never, response().res)).rejects.toMatchObject({ code: "sign_in_not_configured" });
  });
});
