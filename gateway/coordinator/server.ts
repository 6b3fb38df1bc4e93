// The embedded coordinator's HTTP side. Today: the public catalog (SPEC §4.4, DESIGN §3); the agents'
// WebSocket endpoint and the relay join it with the coordinator.
import { createServer, type Server } from "node:http";
import { catalogBody, type Catalog } from "../../src/catalog.ts";
import { ApiError } from "../../src/errors.ts";
import { sendError, sendJson } from "../respond.ts";

export function createCoordinatorServer(catalog: Catalog): Server {
  const body = catalogBody(catalog);
  return createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path !== "/v1/catalog") {
      sendError(req, res, new ApiError("route_not_found", `No route ${req.method} ${path} on the coordinator.`));
    } else if (req.method !== "GET") {
      const error = new ApiError("method_not_allowed", `${req.method} is not allowed on /v1/catalog; use GET.`);
      sendError(req, res, error, { allow: "GET" });
    } else {
      // public: the catalog needs no key (SPEC §5)
      sendJson(res, 200, body);
    }
  });
}
