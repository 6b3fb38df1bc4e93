// Reads a saved answer of POST /v1/embeddings strictly, in the closed shape the gateway writes
// (gateway/openai/embeddings.ts), and rebuilds the content its receipt covers: the vectors' canonical form
// (RECEIPTS.md "Embeddings"), from `float` or `base64` vectors alike. Portable: part of the verifier in src/receipt/index.ts.
import * as z from "zod";
import { base64Length, embeddingsContent, readEmbeddingsContent, vectorBase64 } from "./embedding-vectors.ts";
import { RECEIPT_VERSION_CACHE } from "./receipt.ts";
import { isObject, type Json } from "./saved-json.ts";
import { readShape } from "./saved-shapes.ts";
import type { SavedResponse } from "./types.ts";

const count = z.int().min(0).max(Number.MAX_SAFE_INTEGER);

const BodySchema = z.strictObject({
  object: z.literal("list"),
  data: z.array(z.strictObject({ object: z.literal("embedding"), index: count, embedding: z.union([z.array(z.number()), z.string()]) })).min(1),
  model: z.string(),
  usage: z.strictObject({ prompt_tokens: count, total_tokens: count }),
  svc_receipt: z.unknown().optional(),
});

/** Whether the JSON is an embeddings list. */
export const isEmbeddingsBody = (json: Json): boolean => json.object === "list";

export function fromEmbeddingsBody(json: Json): SavedResponse {
  const problems = "svc_receipt" in json ? [] : ["the response carries no svc_receipt"];
  const read = readShape(BodySchema, json);
  if (read.problem !== undefined) return { kind: "embeddings", receipt: json.svc_receipt, problems: [...problems, `the response is not in the gateway's shape: ${read.problem}`] };
  const { data, usage, svc_receipt } = read.data;
  const content = canonicalContent(data.map((item) => item.embedding));
  if (data.some((item, i) => item.index !== i)) problems.push("data is not in index order from 0");
  if (content === undefined) return { kind: "embeddings", receipt: svc_receipt, problems: [...problems, "the vectors are not all float32 values of one length, in one encoding"] };
  const v3 = isObject(svc_receipt) && svc_receipt.version === RECEIPT_VERSION_CACHE;
  return {
    kind: "embeddings",
    receipt: svc_receipt,
    content,
    toolCalls: [],
    reasoning: null,
    // the receipt's usage, which the response copies without completion_tokens (0 for an embedding)
    usage: { ...usage, completion_tokens: 0, ...(v3 ? { prompt_tokens_details: { cached_tokens: 0 } } : {}) },
    finishReason: "stop",
    problems,
  };
}

/** The canonical form of the vectors, or undefined when they are not one length of exact float32 values in one encoding. */
function canonicalContent(vectors: (number[] | string)[]): string | undefined {
  const first = vectors[0]!;
  const dimensions = typeof first === "string" ? Math.floor((3 * first.length) / 16) : first.length;
  if (typeof first === "string" && base64Length(dimensions) !== first.length) return undefined;
  const base64: string[] = [];
  for (const vector of vectors) {
    if (typeof vector !== typeof first) return undefined;
    // a float that is not exactly a float32 value would be written back as another number than the one shown
    if (typeof vector !== "string" && vector.some((x) => Math.fround(x) !== x)) return undefined;
    base64.push(typeof vector === "string" ? vector : vectorBase64(vector));
  }
  const content = embeddingsContent(base64);
  return readEmbeddingsContent(content, vectors.length, dimensions) === undefined ? undefined : content;
}
