// What a provider's error frame may become for the caller (DESIGN §8, issue 41), read alike by whoever opens it: the
// gateway, or a caller's client in gateway-blind mode. Only the validation codes an agent may report pass through,
// each with svc's own message and a `param` only when it names a value the request holds. Anything else is the
// provider's fault, never the caller's; provider-written text reaches no caller. A report the gateway's own checks
// could not settle is disputed: another provider gets the request before the caller hears it.
import { ApiError } from "../errors.ts";
import { noRoomMessage, readNoRoom, type PROVIDER_ERROR_CODES, type SessionPlaintext } from "./sealed-request.ts";

type CallerCode = Exclude<(typeof PROVIDER_ERROR_CODES)[number], "provider_error">;

/** The 400s an honest agent gives for a request this gateway let through, which no other provider would serve either. */
const CALLER_FAULTS: Record<CallerCode, (provider: string, param: string | null) => string> = {
  context_length_exceeded: (provider) => `The prompt and its answer do not fit the model's context on provider ${provider}; shorten the messages or lower max_tokens.`,
  invalid_value: (provider, param) => `Provider ${provider} found a value this model cannot take${param === null ? "" : ` in ${param}`}; change it.`,
  unsupported_parameter: (provider, param) => `Provider ${provider} does not support ${param ?? "a field of this request"} for this model; remove it.`,
  // the agent bounds a schema's grammar work as the gateway does (src/schema/grammar-work.ts), and its building and
  // sampling as they happen (agent/engine/grammar/grammar-guard.ts): either way the schema's fault, not the provider's
  schema_too_complex: (provider, param) => `Provider ${provider} found ${param ?? "a schema of this request"} too costly for its grammar to build or follow; simplify it.`,
};

/** The longest param a report may name: a path into the request, not a place for text. */
const MAX_PARAM_LENGTH = 256;
/** A path: a name, then `.name` or `[index]` steps. */
const STEPS = /\.([^.[\]]+)|\[(\d{1,6})\]/g;

/** `param` when it is a path to a value `body` holds (so every word in it is the caller's own), else undefined. */
export function paramIn(body: unknown, param: string): string | undefined {
  if (param.length > MAX_PARAM_LENGTH) return undefined;
  const first = /^[^.[\]]+/.exec(param)?.[0];
  if (first === undefined) return undefined;
  let at: unknown = own(body, first);
  const rest = param.slice(first.length);
  let read = 0;
  for (const step of rest.matchAll(STEPS)) {
    if (step.index !== read || at === undefined) return undefined;
    read += step[0].length;
    at = step[1] !== undefined ? own(at, step[1]) : Array.isArray(at) ? at[Number(step[2])] : undefined;
  }
  return read === rest.length && at !== undefined ? param : undefined;
}

const own = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null && !Array.isArray(value) && Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : undefined;

/**
 * What a provider's error frame means:
 * - `caller`: the caller's fault for certain (a schema the agent's grammar budget refused, issue 41 item 1): passed
 *   on, neither re-routed nor charged;
 * - `disputed`: a validation error the gateway could not check itself; an unpinned request tries another provider
 *   first, and the claim is charged (`chargeable`) when another provider then serves the request. The context is
 *   each provider's own (`--context-size`), so a short one is no fault;
 * - `fault`: a code outside the set, or a param that names nothing the request holds: the provider's own fault.
 */
export type Report = { kind: "caller"; error: ApiError } | ({ kind: "disputed" } & Disputed) | { kind: "fault"; why: string };

/** A validation error a provider claimed, and whether it is charged once another provider serves the request. */
export interface Disputed {
  error: ApiError;
  chargeable: boolean;
}

export function readReport(frame: { code: string; param: string | null; message?: string }, provider: string, body: SessionPlaintext): Report {
  if (!Object.hasOwn(CALLER_FAULTS, frame.code)) return { kind: "fault", why: "reported an error of its own" };
  const code = frame.code as CallerCode;
  const param = frame.param === null ? null : (paramIn(body, frame.param) ?? null);
  if (frame.param !== null && param === null) return { kind: "fault", why: "reported an error naming no field of the request" };
  // the agent's room for max_tokens: only its four numbers are read, so the caller learns the limit, as OpenAI says
  // it, and no word the provider wrote
  const room = code === "context_length_exceeded" && param === "max_tokens" ? readNoRoom(frame.message ?? "", body.model) : undefined;
  const error = room ? new ApiError(code, noRoomMessage(room), { param }) : new ApiError(code, CALLER_FAULTS[code](provider, param), { param });
  if (code === "schema_too_complex") return { kind: "caller", error };
  return { kind: "disputed", error, chargeable: code === "invalid_value" || code === "unsupported_parameter" };
}
