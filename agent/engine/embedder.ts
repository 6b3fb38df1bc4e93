// Embeddings on the agent (POST /v1/embeddings): an embedding model loaded through node-llama-cpp's
// LlamaEmbeddingContext, run on every input of one request in one hold of the engine (engine.ts `embed`), and
// the session's answer as the pieces and `done` record a generation yields, so the session runner seals and
// signs it like any other.
import type { LlamaEmbeddingContext, LlamaModel } from "node-llama-cpp";
import { ApiError } from "../../src/errors.ts";
import { embeddingsPieces, vectorBase64 } from "../../src/receipt/embedding-vectors.ts";
import type { SessionPlaintext } from "../../src/session/sealed-request.ts";
import type { EmbeddingRequest, EmbeddingResult, Embeds, GenerateEvent } from "./inference.ts";

/** Truncates to the first `dimensions` values (Matryoshka) and scales to unit length, as OpenAI returns vectors. */
export function unitPrefix(vector: readonly number[], dimensions: number): Float32Array {
  const out = Float32Array.from(vector.slice(0, dimensions));
  const norm = Math.sqrt(out.reduce((sum, v) => sum + v * v, 0));
  const scale = norm > 0 ? norm : 1;
  // `+ 0` makes a -0 a 0: JSON writes -0 as 0, and the receipt covers the float32 bits, so a float answer holding
  // a -0 could not be verified from its saved body
  for (let i = 0; i < out.length; i++) out[i] = out[i]! / scale + 0;
  return out;
}

/** One embedding model, loaded with its context; the engine holds at most one model of either kind. */
export class LoadedEmbedder {
  private constructor(
    readonly alias: string,
    readonly sha256: string,
    readonly model: LlamaModel,
    private readonly context: LlamaEmbeddingContext,
    private readonly contextSize: number,
    private readonly vocabularySize: number,
  ) {}

  /** Takes ownership of `model`: it is disposed with the embedder, or at once if the context cannot be made. */
  static async create(alias: string, sha256: string, model: LlamaModel, options: { contextSize: number; threads: number }): Promise<LoadedEmbedder> {
    try {
      const contextSize = Math.min(model.trainContextSize, options.contextSize);
      const context = await model.createEmbeddingContext({ contextSize, threads: options.threads });
      const vocabularySize = model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length;
      if (vocabularySize === undefined) throw new Error(`${alias}: the GGUF lists no tokenizer.ggml.tokens`);
      return new LoadedEmbedder(alias, sha256, model, context, contextSize, vocabularySize);
    } catch (err) {
      await model.dispose();
      throw err;
    }
  }

  /** Every input in order, back to back in the one context (node-llama-cpp evaluates one sequence per call). */
  async embed(request: EmbeddingRequest, signal?: AbortSignal): Promise<EmbeddingResult> {
    const vectors: string[] = [];
    let promptTokens = 0;
    for (const [i, input] of request.input.entries()) {
      signal?.throwIfAborted();
      const param = `input[${i}]`;
      // an id past the vocabulary would read outside llama.cpp's embedding table
      if (typeof input !== "string" && input.some((t) => t >= this.vocabularySize)) {
        throw new ApiError("invalid_value", `${param} names a token id past ${this.alias}'s vocabulary of ${this.vocabularySize}.`, { param });
      }
      const tokens = typeof input === "string" ? input : [...input];
      const length = this.context.calculateInputLength(tokens as Parameters<LlamaEmbeddingContext["calculateInputLength"]>[0]);
      if (length >= this.contextSize) {
        throw new ApiError("context_length_exceeded", `${param} is ${length} tokens; ${this.alias} embeds at most ${this.contextSize - 1}.`, { param });
      }
      const { vector } = await this.context.getEmbeddingFor(tokens as Parameters<LlamaEmbeddingContext["getEmbeddingFor"]>[0]);
      // the catalog's embedding_dimensions told the gateway this length; a model file that disagrees cannot serve it
      if (vector.length < request.dimensions) throw new Error(`${this.alias} returned ${vector.length} values, fewer than the ${request.dimensions} asked`);
      vectors.push(vectorBase64(unitPrefix(vector, request.dimensions)));
      promptTokens += length;
    }
    return { vectors, prompt_tokens: promptTokens, model_sha256: this.sha256 };
  }

  async dispose(): Promise<void> {
    await this.context.dispose();
    await this.model.dispose();
  }
}

/** An embeddings session as answer events: one delta per vector (the canonical content in pieces), then `done`. */
export async function* embeddingEvents(engine: Partial<Embeds>, request: SessionPlaintext, signal: AbortSignal): AsyncGenerator<GenerateEvent, void, void> {
  if (engine.embed === undefined || request.input === undefined || request.dimensions === undefined) {
    throw new ApiError("provider_error", "This provider's engine computes no embeddings.");
  }
  const result = await engine.embed({ model: request.model, input: request.input, dimensions: request.dimensions }, signal);
  for (const text of embeddingsPieces(result.vectors)) yield { type: "delta", text };
  yield { type: "done", prompt_tokens: result.prompt_tokens, completion_tokens: 0, cached_tokens: 0, finish_reason: "stop", model_sha256: result.model_sha256 };
}
