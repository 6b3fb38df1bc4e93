// What an agent holds a gateway-blind plaintext to (DESIGN §10, SEALING.md). The caller sealed it and the gateway
// never read it, so the agent applies every bound the gateway's parser applies to a request it builds (with the same
// functions: the schema and rules between fields, SPEC §8's 100 messages and 256 KiB of content, the embeddings and
// prompt limits, well-formed Unicode), and holds the plaintext to the clear fields the gateway admitted, routed and
// bills it by. The request's schemas meet their limits and step budget when its turn is planned, as any session's do.
import { kindOf, type CatalogEntry } from "../catalog.ts";
import { ApiError } from "../errors.ts";
import { contentFault, issueError, MAX_MESSAGES, refuseLoneSurrogates } from "../openai/chat-request.ts";
import { inputFault } from "../openai/embeddings-request.ts";
import { readJsonBody } from "../openai/json-body.ts";
import { promptFault } from "../openai/legacy-request.ts";
import { answerTokenCap, parseSessionPlaintext, type SessionPlaintext } from "../session/sealed-request.ts";
import { firstIssue } from "../validation.ts";
import type { SealedEnvelope } from "./format.ts";

const refuse = (param: string, message: string) => new ApiError("invalid_value", message, { param });

/** The request in `bytes` (what opened under the envelope), or the 400 the caller gets, sealed, for its first fault. */
export function readBlindPlaintext(bytes: Uint8Array, envelope: SealedEnvelope, entry: CatalogEntry): SessionPlaintext {
  let request: SessionPlaintext;
  try {
    request = parseSessionPlaintext(readJsonBody(bytes));
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw issueError(firstIssue(err as Parameters<typeof firstIssue>[0]));
  }
  if (request.model !== envelope.alias) throw refuse("model", `model is ${request.model}, but the sealed request's envelope names ${envelope.alias}; seal the alias the request resolves to.`);
  if (request.cache_scope !== undefined || request.cache_owner !== undefined) {
    // the scope is the gateway's HMAC of the caller's key, sent beside the sealed bytes: a caller choosing its own could reach another's cache
    throw refuse(request.cache_scope !== undefined ? "cache_scope" : "cache_owner", "A sealed request carries no cache_scope or cache_owner: the gateway sets the caller's prompt-cache scope beside it.");
  }
  const embeddings = envelope.kind === "embeddings";
  if (kindOf(entry) !== (embeddings ? "embedding" : "chat")) {
    throw new ApiError("model_kind_mismatch", `${entry.alias} is ${embeddings ? "not an embedding model" : "an embedding model"}; the ${envelope.kind} route does not serve it.`, { param: "model" });
  }
  const shape = embeddings ? request.input !== undefined : envelope.kind === "completions" ? request.prompt !== undefined : request.messages.length > 0;
  if (!shape) throw refuse(embeddings ? "input" : envelope.kind === "completions" ? "prompt" : "messages", `The sealed request is not a ${envelope.kind} request.`);
  if (request.messages.length > MAX_MESSAGES) throw new ApiError("too_many_messages", `messages: at most ${MAX_MESSAGES} messages are allowed.`, { param: "messages" });
  const tooMuch = contentFault(request.messages) ?? (request.prompt === undefined ? undefined : promptFault(request.prompt)) ?? (request.input === undefined ? undefined : inputFault(request.input));
  if (tooMuch) throw tooMuch;
  refuseLoneSurrogates(request);
  budgetFault(request, envelope);
  return request;
}

/** The clear budget is what the gateway admits and bounds the answer by: the sealed request may not ask for more. */
function budgetFault(request: SessionPlaintext, { kind, stream, max_tokens: budget }: SealedEnvelope): void {
  if (kind === "embeddings") {
    if (stream) throw refuse("stream", "An embeddings request does not stream.");
    // one vector per input: the gateway bounds the answer by the count
    if (request.input!.length !== budget) throw refuse("input", `input holds ${request.input!.length} inputs, but the sealed request's envelope says ${budget}.`);
    return;
  }
  const asked = answerTokenCap(request);
  if (asked > budget) {
    throw refuse("max_tokens", `max_tokens is ${asked}${request.max_tokens === undefined ? " (its default)" : ""}, more than the ${budget} the sealed request's envelope allows the answer.`);
  }
}
