// What a session runs on: a generator of answer events (text, reasoning, tool calls) and one `done` record. The llama.cpp engine is the one
// that serves; the synthetic engine exists only so benchmarks can isolate the gateway path from inference.
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
  | { type: "delta"; text: string }
  /** The think block's text, apart, under `reasoning_format: "parsed"`. */
  | { type: "reasoning"; text: string }
  /** A tool call begins; its arguments follow as `tool_args` pieces that join to the whole JSON text. */
  | { type: "tool_call"; index: number; id: string; name: string }
  | { type: "tool_args"; index: number; text: string }
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
