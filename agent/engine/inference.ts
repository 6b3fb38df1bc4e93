// What a session runs on: a generator of answer pieces (text, reasoning, tool calls) and one `done` record. The llama.cpp engine is the one
// that serves; the synthetic engine exists only so benchmarks can isolate the gateway path from inference.
import type { AnswerPiece } from "../../src/receipt/answer-record.ts";
import type { FinishReason } from "../../src/receipt/receipt.ts";
import type { Sampling } from "../../src/session/sampling.ts";
import type { ChatMessage } from "../../src/session/sealed-request.ts";
import type { Tooling } from "../../src/session/tools.ts";

/** The sealed request as the engine takes it: the sampling controls are there only when the caller set them. */
export interface GenerateRequest extends Sampling, Tooling {
  /** Catalog alias (already resolved). */
  model: string;
  messages: readonly ChatMessage[];
  max_tokens: number;
  temperature: number;
  signal?: AbortSignal;
}

export type GenerateEvent =
  | AnswerPiece
  | {
      type: "done";
      prompt_tokens: number;
      completion_tokens: number;
      finish_reason: FinishReason;
      /** Tokens of the think block, counted only under `reasoning_format: "parsed"`. */
      reasoning_tokens?: number;
      /** SHA-256 of the GGUF file that produced the answer. */
      model_sha256: string;
    };

export interface InferenceEngine {
  /** Streams text deltas, then one `done` record. Throws the signal's reason when aborted. */
  generate(request: GenerateRequest): AsyncGenerator<GenerateEvent, void, void>;
  dispose(): Promise<void>;
}
