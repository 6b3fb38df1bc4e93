// What a provider's error frame may become for the caller (DESIGN §8): only the validation codes an agent may
// report pass through, each with svc's own message and a `param` only when it names a field the caller sent.
// Anything else is the provider's fault, never the caller's; provider-written text reaches no caller.
import { ApiError, ERROR_CODES, type ErrorCode } from "../../src/errors.ts";
import { noRoomMessage, readNoRoom, type PROVIDER_ERROR_CODES } from "../../src/session/sealed-request.ts";
import type { WireError } from "../../src/wire/gateway.ts";

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

/** A provider's param names a field only when its first name is a field of the request the gateway sealed. */
const PARAM = /^([a-z_]{1,64})(?:[.[][A-Za-z0-9_.[\]/-]{0,192})?$/;

/** The caller's error for a reported validation code, or undefined: the report is the provider's own fault. */
export function callerError(frame: { code: string; param: string | null; message?: string }, provider: string, fields: readonly string[], alias?: string): ApiError | undefined {
  if (!Object.hasOwn(CALLER_FAULTS, frame.code)) return undefined;
  const code = frame.code as CallerCode;
  const name = frame.param === null ? undefined : PARAM.exec(frame.param)?.[1];
  const param = name !== undefined && fields.includes(name) ? frame.param : null;
  // the agent's room for max_tokens: only its four numbers are read, so the caller learns the limit, as OpenAI says
  // it, and no word the provider wrote
  const room = code === "context_length_exceeded" && param === "max_tokens" && alias !== undefined ? readNoRoom(frame.message ?? "", alias) : undefined;
  if (room) return new ApiError(code, noRoomMessage(room), { param });
  return new ApiError(code, CALLER_FAULTS[code](provider, param), { param });
}

/** The coordinator's refusal of a placement (queue full, waited too long): its own codes, passed on as they are. */
export function rejection(error: WireError): ApiError {
  const code = (error.code in ERROR_CODES ? error.code : "provider_unavailable") as ErrorCode;
  return new ApiError(code, error.message, { param: error.param, ...(error.retry_after_s === undefined ? {} : { retryAfterS: error.retry_after_s }) });
}
