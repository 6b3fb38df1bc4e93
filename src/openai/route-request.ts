// The one request every OpenAI route parses its body into (DESIGN §10): each route states its kind, and its
// parser turns a body into the sealed request plus what shaping the answer needs. Whoever runs it (the gateway, or
// a caller's own client in gateway-blind mode) gets the same request from the same body.
import { parseChatRequest, type ChatContext, type ChatRequest } from "./chat-request.ts";
import { parseEmbeddingsRequest, type EmbeddingsRequest } from "./embeddings-request.ts";
import { parseLegacyRequest } from "./legacy-request.ts";
import { parseResponsesRequest, type ResponsesEcho } from "./responses-request.ts";
import type { RouteKind } from "./route-kinds.ts";

/** A parsed request of any route: plain data, so it crosses a worker thread as a structured clone. */
export type RouteRequest =
  | (ChatRequest & { kind: "chat" | "completions" })
  | (ChatRequest & { kind: "responses"; responses: ResponsesEcho })
  | (EmbeddingsRequest & { kind: "embeddings"; stream: false; cacheScope: undefined });

/** The route's parser on a JSON body: the request, or the 400 (404 for an unknown model) for its first fault. */
export function parseRoute(kind: RouteKind, body: unknown, context: ChatContext): RouteRequest {
  switch (kind) {
    case "chat":
      return { kind, ...parseChatRequest(body, context) };
    case "completions":
      return { kind, ...parseLegacyRequest(body, context) };
    case "responses": {
      const { chat, echo } = parseResponsesRequest(body, context);
      return { kind, ...chat, responses: echo };
    }
    case "embeddings":
      return { kind, ...parseEmbeddingsRequest(body, context), stream: false, cacheScope: undefined };
  }
}

/** What admission reads of a body before its costly parse: the model and pin it names, and its prompt_cache_key. */
export interface RoutePeek {
  model?: string;
  pin?: string;
  promptCacheKey?: string;
}

/** The peek's fields, each only where it reads plainly as a string; anything odd is left for the parser to refuse. */
export function peekRoute(body: unknown): RoutePeek {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return {};
  const { model, provider, provider_key_id: keyId, prompt_cache_key: cacheKey } = body as Record<string, unknown>;
  const pin = provider ?? keyId ?? undefined;
  return {
    ...(typeof model === "string" ? { model } : {}),
    ...(typeof pin === "string" ? { pin: pin.toLowerCase() } : {}),
    ...(typeof cacheKey === "string" ? { promptCacheKey: cacheKey } : {}),
  };
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** Whether the body holds a JSON schema to work (a response format's, or a tool's parameters): worth a worker. */
export function carriesSchema(kind: RouteKind, body: unknown): boolean {
  if (!isObject(body)) return false;
  const { response_format: format, text, tools } = body;
  const formatSchema = kind === "responses" ? (isObject(text) && isObject(text.format) ? text.format.schema : undefined) : isObject(format) && isObject(format.json_schema) ? format.json_schema.schema : undefined;
  if (isObject(formatSchema)) return true;
  if (!Array.isArray(tools)) return false;
  return tools.some((tool: unknown) => isObject(tool) && isObject(kind === "responses" ? tool.parameters : isObject(tool.function) ? tool.function.parameters : undefined));
}
