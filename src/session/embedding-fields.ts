// What an embeddings session adds to the sealed request (POST /v1/embeddings): its inputs and the vector length
// to return. Optional fields, so a chat request seals the same bytes as before they existed.
import * as z from "zod";

/** OpenAI's limit on inputs per request. */
export const MAX_EMBEDDING_INPUTS = 2048;
/** Tokens in one token-array input; past any catalog model's context, so the agent's context check decides. */
export const MAX_INPUT_TOKENS = 32_768;
/** The largest id a token-array input may name; the agent checks it against its model's vocabulary. */
export const MAX_TOKEN_ID = 2 ** 31 - 1;

export const EmbeddingInputSchema = z.union([
  z.string().min(1),
  z.array(z.int().min(0).max(MAX_TOKEN_ID)).min(1).max(MAX_INPUT_TOKENS),
]);
export type EmbeddingInput = z.infer<typeof EmbeddingInputSchema>;

export const EmbeddingFieldsSchema = z.strictObject({
  /** Each input is embedded on its own, in order: text, or token ids of the model's vocabulary. */
  input: z.array(EmbeddingInputSchema).min(1).max(MAX_EMBEDDING_INPUTS).optional(),
  /** The length of every returned vector: the model's own, or the shorter one the caller asked for (Matryoshka). */
  dimensions: z.int().positive().max(65_536).optional(),
});

/** An embeddings session has inputs, a length and no messages; a chat turn has none of the first two. */
export function embeddingFault(request: { input?: unknown; dimensions?: number | undefined; messages: readonly unknown[] }): string | undefined {
  if (request.input === undefined) return request.dimensions === undefined ? undefined : "dimensions belongs to an embeddings session";
  if (request.dimensions === undefined) return "an embeddings session needs dimensions";
  return request.messages.length > 0 ? "an embeddings session has no messages" : undefined;
}
