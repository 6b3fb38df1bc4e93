// The body of POST /v1/embeddings (OpenAI's embeddings request), parsed once at the boundary into the sealed
// request an embeddings session carries: every fault a 400 naming its field, before any provider is touched.
import * as z from "zod";
import { resolveModel, type Catalog, type CatalogEntry } from "../catalog.ts";
import { ApiError } from "../errors.ts";
import { EmbeddingInputSchema, MAX_EMBEDDING_INPUTS, type EmbeddingInput } from "../session/embedding-fields.ts";
import type { SessionPlaintext } from "../session/sealed-request.ts";
import { firstIssue } from "../validation.ts";
import { issueError, parseReceiptNonce, pinOf, Text } from "./chat-request.ts";

/** Characters of text over all inputs (the chat limit's four times: a batch of document chunks is the usual call). */
export const MAX_INPUT_CHARS = 1024 * 1024;
/** Token ids over all token-array inputs. */
export const MAX_INPUT_TOKEN_IDS = 256 * 1024;

const TokenIds = EmbeddingInputSchema.options[1];
const Input = z.union([Text.min(1), z.array(Text.min(1)).min(1).max(MAX_EMBEDDING_INPUTS), TokenIds, z.array(TokenIds).min(1).max(MAX_EMBEDDING_INPUTS)]);

const Body = z.object({
  model: z.string().min(1),
  input: Input,
  encoding_format: z.enum(["float", "base64"]).nullish(),
  dimensions: z.int().positive().nullish(),
  provider: z.string().nullish(),
  provider_key_id: z.string().nullish(),
  // accepted and ignored: it cannot change the answer
  user: z.string().nullish(),
});

export interface EmbeddingsRequest {
  /** What is sealed to the provider: no messages, the inputs as a list, and the length every vector has. */
  body: SessionPlaintext;
  entry: CatalogEntry;
  echo: string;
  encoding: "float" | "base64";
  pin: string | undefined;
}

export interface EmbeddingsContext {
  catalog: Catalog;
  nonce: string;
  receiptNonce?: string | string[] | undefined;
}

/** One input is a string or one token array; anything else is a list of them. */
function inputsOf(input: z.infer<typeof Input>): EmbeddingInput[] {
  if (typeof input === "string") return [input];
  return input.length > 0 && typeof input[0] === "number" ? [input as number[]] : (input as EmbeddingInput[]);
}

/** The length every vector will have: the model's own, or a shorter one where its Matryoshka training allows. */
function dimensionsOf(entry: CatalogEntry, asked: number | null | undefined): number {
  const native = entry.embedding_dimensions!;
  if (asked == null) return native;
  const min = entry.matryoshka_min;
  if (min === undefined) {
    throw new ApiError("unsupported_parameter", `dimensions: ${entry.alias} returns vectors of ${native} values only and cannot shorten them; leave dimensions out.`, { param: "dimensions" });
  }
  if (asked < min || asked > native) {
    throw new ApiError("invalid_value", `dimensions: ${entry.alias} returns between ${min} and ${native} values; got ${asked}.`, { param: "dimensions" });
  }
  return asked;
}

/** Inputs past a request's characters or token ids, as the 400 that says so; undefined within them. */
export function inputFault(input: readonly EmbeddingInput[]): ApiError | undefined {
  const chars = input.reduce((sum, i) => sum + (typeof i === "string" ? i.length : 0), 0);
  if (chars > MAX_INPUT_CHARS) {
    return new ApiError("content_too_large", `input holds ${chars} characters; at most ${MAX_INPUT_CHARS} (1 MiB) are allowed per request.`, { param: "input" });
  }
  const ids = input.reduce((sum, i) => sum + (typeof i === "string" ? 0 : i.length), 0);
  if (ids > MAX_INPUT_TOKEN_IDS) {
    return new ApiError("content_too_large", `input holds ${ids} token ids; at most ${MAX_INPUT_TOKEN_IDS} are allowed per request.`, { param: "input" });
  }
  return undefined;
}

export function parseEmbeddingsRequest(body: unknown, context: EmbeddingsContext): EmbeddingsRequest {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new ApiError("invalid_type", "The request body must be a JSON object.");
  }
  const { input: raw } = body as { input?: unknown };
  // an empty list matches no branch of the union; said plainly rather than as the union's type fault
  if (Array.isArray(raw) && raw.length === 0) throw new ApiError("invalid_value", "input: expected at least one input.", { param: "input" });
  const parsed = Body.safeParse(body, { reportInput: true });
  if (!parsed.success) throw issueError(firstIssue(parsed.error));
  const b = parsed.data;
  const input = inputsOf(b.input);
  const tooMuch = inputFault(input);
  if (tooMuch) throw tooMuch;
  const pin = pinOf(b);
  const clientNonce = parseReceiptNonce(context.receiptNonce);
  const entry = resolveModel(context.catalog, b.model, "embedding");
  return {
    body: {
      model: entry.alias,
      messages: [],
      // no sampling happens; the field is the chat turn's, kept so that the sealed shape stays one
      temperature: 0,
      input,
      dimensions: dimensionsOf(entry, b.dimensions),
      nonce: context.nonce,
      client_nonce: clientNonce,
    },
    entry,
    echo: b.model,
    encoding: b.encoding_format ?? "float",
    pin,
  };
}
