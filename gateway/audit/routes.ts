// GET /v1/audits/key and GET /v1/audits/{id} (issue 43 item 4, AUDIT-DESIGN §5): public, like /verify, so anyone can
// re-check a failure (`svc-agent verify --audit FILE --model PATH --auditor-key KEY`) without a key here. Only failures
// are served: a passing audit's prompt would show the provider the operator's private corpus.
import type { ServerResponse } from "node:http";
import { ApiError } from "../../src/errors.ts";
import type { Gateway } from "../context.ts";
import { readable, Router } from "../http/router.ts";
import { sendBody, sendJson } from "../http/respond.ts";
import { AUDIT_ID } from "../keys/audit-store.ts";

export const AUDITS_PATH = "/v1/audits/";

export const isAuditPath = (path: string): boolean => path.startsWith(AUDITS_PATH);

type Handler = (gateway: Gateway, res: ServerResponse, param: string) => Promise<void>;

const notAuditing = () => new ApiError("route_not_found", "This gateway does not audit its providers (svc-gateway serve --audit); it keeps no audits.");

const ROUTES = new Router<Handler>([
  {
    name: "/v1/audits/key",
    path: "/v1/audits/key",
    methods: readable(async (gateway, res) => {
      if (gateway.audits === undefined) throw notAuditing();
      sendJson(res, 200, { object: "audit.key", key: gateway.audits.key });
    }),
  },
  {
    name: "/v1/audits/{id}",
    path: /^\/v1\/audits\/([^/]+)$/,
    methods: readable(async (gateway, res, id) => {
      if (gateway.audits === undefined) throw notAuditing();
      const evidence = AUDIT_ID.test(id) ? await gateway.audits.store.evidence(id) : undefined;
      if (evidence === undefined) throw new ApiError("audit_not_found", `No failed audit ${JSON.stringify(id.slice(0, 64))} is kept here; a provider's failures are listed on GET /v1/providers/{id}/attestation.`);
      sendBody(res, 200, "application/json", evidence);
    }),
  },
], (method, path) => `No route ${method} ${path}; the API is in docs/api.md.`);

/** Resolves a /v1/audits/ path (throwing 404/405 as the API does) to what serves it. */
export function resolveAuditRoute(gateway: Gateway, method: string, path: string, res: ServerResponse): { name: string; serve: () => Promise<void> } {
  const { name, handler, param } = ROUTES.resolve(method, path, res);
  return { name, serve: () => handler(gateway, res, param) };
}
