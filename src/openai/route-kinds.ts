// The four OpenAI routes svc serves, by kind, and where each is served: apart from route-request.ts's parsing so
// that the sealed format (src/blind/format.ts) and a caller's route table name them without pulling the parser in.
export const ROUTE_KINDS = ["chat", "responses", "embeddings", "completions"] as const;
export type RouteKind = (typeof ROUTE_KINDS)[number];

/** Where each kind is served. */
export const ROUTE_PATHS = {
  chat: "/v1/chat/completions",
  responses: "/v1/responses",
  embeddings: "/v1/embeddings",
  completions: "/v1/completions",
} as const satisfies Record<RouteKind, string>;
