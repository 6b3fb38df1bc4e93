// What a session runs on: a generator of answer pieces (text, reasoning, tool calls) and one `done` record. The llama.cpp engine is the one
// that serves; the synthetic engine exists only so benchmarks can isolate the gateway path from inference.
import type { AnswerPiece } from "../../src/receipt/answer-record.ts";
import type { FinishReason } from "../../src/receipt/receipt.ts";
import type { Turn } from "./turn.ts";
import type { EmbeddingInput } from "../../src/session/embedding-fields.ts";
import type { ModelStore } from "../models/store.ts";

/** What the llama.cpp engine asks of the model store: an alias's file, its hash checked (a test-only substitute swaps the path). */
export type EngineStore = Pick<ModelStore, "verify">;

/** The end of a generation: what the receipt reports of it. */
export interface GenerationDone {
  type: "done";
  prompt_tokens: number;
  /** How many of the prompt's tokens came from this caller's cache rather than being evaluated afresh. */
  cached_tokens: number;
  completion_tokens: number;
  finish_reason: FinishReason;
  /** Tokens of the think block, counted only under `reasoning_format: "parsed"`. */
  reasoning_tokens?: number;
  /** SHA-256 of the GGUF file that produced the answer. */
  model_sha256: string;
}

export type GenerateEvent = AnswerPiece | GenerationDone;

export interface EmbeddingRequest {
  model: string;
  input: readonly EmbeddingInput[];
  dimensions: number;
}

export interface EmbeddingResult {
  /** Each input's vector, truncated to `dimensions` and scaled to unit length, as canonical base64. */
  vectors: string[];
  prompt_tokens: number;
  model_sha256: string;
}

/** What computes embeddings: the llama.cpp engine does; the synthetic benchmark engine does not. */
export interface Embeds {
  embed(request: EmbeddingRequest, signal?: AbortSignal): Promise<EmbeddingResult>;
}


export interface InferenceEngine {
  /** Streams the turn's answer pieces, then one `done` record. Throws the signal's reason when aborted. */
  generate(turn: Turn, signal?: AbortSignal): AsyncGenerator<GenerateEvent, void, void>;
  /** POST /v1/embeddings; an engine without it answers such a session with provider_error. */
  embed?: Embeds["embed"];
  dispose(): Promise<void>;
}
