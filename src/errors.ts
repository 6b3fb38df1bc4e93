// The one API error type (SPEC §2.7, §7): every error envelope is built here from a code table, so status,
// type and svc_action can never disagree between routes.

export type SvcAction = "fix_key" | "retry" | "wait" | "fix_request" | "pick_model";

interface CodeInfo {
  status: number;
  type: "invalid_request_error" | "authentication_error" | "rate_limit_error" | "api_error";
  action: SvcAction;
  /** The `Retry-After` seconds every error of this code carries unless it names its own (each 503, and 502 directory_unavailable). */
  retryAfterS?: number;
}

const request = (status = 400): CodeInfo => ({ status, type: "invalid_request_error", action: "fix_request" });

export const ERROR_CODES = {
  // 400: request faults, one stable code per case
  invalid_json: request(),
  invalid_content_type: request(),
  missing_field: request(),
  invalid_type: request(),
  invalid_value: request(),
  unsupported_content_part: request(),
  // an OpenAI field svc does not honour (yet), set to a value that would change the answer
  unsupported_parameter: request(),
  too_many_messages: request(),
  content_too_large: request(),
  context_length_exceeded: request(),
  // a JSON Schema (response_format, a tool's parameters) that needs more work than one request may spend on it
  schema_too_complex: request(),
  // a gateway-blind request (DESIGN §10) whose sealed bytes open for none of the providers it was sealed to
  sealed_request_invalid: request(),
  body_too_large: request(413),
  // objects and arrays nested past the body's depth limit, found before the body is parsed
  body_too_deep: request(),
  // faults in the HTTP message itself, answered before any route runs
  malformed_request: request(),
  headers_too_large: request(431),
  request_timeout: request(408),
  // SPEC §5: 401 is an invalid_request_error with fix_key
  invalid_api_key: { status: 401, type: "invalid_request_error", action: "fix_key" },
  model_not_found: { status: 404, type: "invalid_request_error", action: "pick_model" },
  // a chat model named on /v1/embeddings, or an embedding model on a chat route
  model_kind_mismatch: { status: 400, type: "invalid_request_error", action: "pick_model" },
  route_not_found: request(404),
  // GET /v1/providers/{id}/attestation for an id that names no listed provider
  provider_not_found: request(404),
  // GET /v1/audits/{id} for an id that names no failed audit kept here (passing audits are never published)
  audit_not_found: request(404),
  method_not_allowed: request(405),
  // the gateway's link to the coordinator reconnects within about a second
  directory_unavailable: { status: 502, type: "api_error", action: "wait", retryAfterS: 2 },
  receipt_invalid: { status: 502, type: "api_error", action: "retry" },
  // gateway-blind (DESIGN §10), answered by the caller's own client: a sealed answer that does not open or check
  // (tampered, replayed, cut, from a provider outside the candidates, a receipt that does not verify)
  sealed_answer_invalid: { status: 502, type: "api_error", action: "retry" },
  provider_error: { status: 502, type: "api_error", action: "retry" },
  // an agent reconnects or a dropped one is replaced in seconds, not milliseconds
  provider_unavailable: { status: 503, type: "api_error", action: "wait", retryAfterS: 5 },
  // admission control: every provider's queue is full, or the request waited its longest in one
  overloaded: { status: 503, type: "api_error", action: "wait", retryAfterS: 1 },
  // a key over its concurrency, requests-per-minute or tokens-per-minute limit, or an address failing to authenticate
  rate_limited: { status: 429, type: "rate_limit_error", action: "wait" },
  internal_error: { status: 500, type: "api_error", action: "retry" },
  // the gateway is draining on SIGTERM: this request could not finish in time, another gateway can take it
  shutting_down: { status: 503, type: "api_error", action: "retry", retryAfterS: 1 },
  // the settings pages (HTML, not the API): sign-in, CSRF and key ownership
  sign_in_required: { status: 401, type: "authentication_error", action: "fix_key" },
  sign_in_failed: { status: 400, type: "authentication_error", action: "fix_key" },
  sign_in_unavailable: { status: 503, type: "api_error", action: "wait", retryAfterS: 5 },
  // the shared key store (PostgreSQL, --database) is away: only keys not yet cached, sign-ins and new keys wait for it
  key_store_unavailable: { status: 503, type: "api_error", action: "wait", retryAfterS: 2 },
  sign_in_not_configured: { status: 404, type: "invalid_request_error", action: "fix_key" },
  csrf_failed: { status: 403, type: "invalid_request_error", action: "fix_request" },
  // every user's usage (/settings/usage) is for operator keys and the --admin-emails list only
  operator_only: { status: 403, type: "invalid_request_error", action: "fix_key" },
  key_not_found: request(404),
  invalid_form: request(),
  // a user holds `serve --max-keys-per-user` live keys already: per-key limits must not multiply without end
  too_many_keys: request(409),
} as const satisfies Record<string, CodeInfo>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface ErrorEnvelope {
  error: { message: string; type: string; code: ErrorCode; param: string | null; svc_action: SvcAction };
}

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly param: string | null;
  readonly status: number;
  readonly type: string;
  readonly svcAction: SvcAction;
  /** Seconds after which a retry may succeed: the `Retry-After` header of a 429, a 503 or a 502 directory_unavailable. */
  readonly retryAfterS?: number;

  constructor(code: ErrorCode, message: string, options: { param?: string | null; svcAction?: SvcAction; retryAfterS?: number } = {}) {
    super(message);
    this.name = "ApiError";
    const info: CodeInfo = ERROR_CODES[code];
    this.code = code;
    this.param = options.param ?? null;
    this.status = info.status;
    this.type = info.type;
    this.svcAction = options.svcAction ?? info.action;
    const retryAfterS = options.retryAfterS ?? info.retryAfterS;
    if (retryAfterS !== undefined) this.retryAfterS = Math.max(1, Math.ceil(retryAfterS));
  }

  toEnvelope(): ErrorEnvelope {
    return {
      error: { message: this.message, type: this.type, code: this.code, param: this.param, svc_action: this.svcAction },
    };
  }
}
