// What a session runs on: a generator of text deltas and one `done` record. The llama.cpp engine is the one
// that serves; the synthetic engine exists only so benchmarks can isolate the gateway path from inference.
import type { FinishReason } from "../src/receipt.ts";
import type { Sampling } from "../src/sampling.ts";
import type { ChatMessage } from "../src/session-protocol.ts";

/** The sealed request as the engine takes it: the sampling controls are there only when the caller set them. */
export interface GenerateRequest extends Sampling {
  /** Catalog alias (already resolved). */
  model: string;
  messages: readonly ChatMessage[];
  max_tokens: number;
  temperature: number;
  signal?: AbortSignal;
}

export type GenerateEvent =
  | { type: "delta"; text: string }
  | {
      type: "done";
      prompt_tokens: number;
      completion_tokens: number;
      finish_reason: FinishReason;
      /** SHA-256 of the GGUF file that produced the answer. */
      model_sha256: string;
    };

export interface InferenceEngine {
  /** Streams text deltas, then one `done` record. Throws the signal's reason when aborted. */
  generate(request: GenerateRequest): AsyncGenerator<GenerateEvent, void, void>;
  dispose(): Promise<void>;
}
