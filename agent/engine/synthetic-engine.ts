// The benchmark engine (`svc-agent start --engine synthetic`): no model, N tokens at a fixed pace, the way
// Bifrost and LiteLLM benchmark against mock upstreams. It lets `npm run bench` measure what the gateway,
// coordinator, sealing and receipts add, apart from inference. Its receipts name the catalog's pinned file
// although none ran, so an agent using it never claims a rung above `process` (see agent/daemon/start.ts).
import { setTimeout as sleep } from "node:timers/promises";
import type { GenerateEvent, InferenceEngine } from "./inference.ts";
import { Slots } from "./slots.ts";
import type { GenerateRequest, Turn } from "./turn.ts";
import { answerTokenCap } from "../../src/session/sealed-request.ts";
import { UNLIKELY_LOGPROB, type TokenLogprob } from "../../src/receipt/logprobs.ts";

export interface SyntheticOptions {
  /** Tokens per answer, unless max_tokens is lower. */
  tokens: number;
  /** Pause before each token; 0 emits them back to back. */
  tokenMs: number;
  /** The catalog's pinned SHA-256 for an alias, which the receipt names. */
  sha256Of(alias: string): string;
}

/** One word per token, so content length and token counts stay easy to check. */
const WORDS = ["lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit"];

/** About four characters per token, the usual rule of thumb, so usage is plausible without a tokenizer. */
export function syntheticPromptTokens(request: Pick<GenerateRequest, "messages">): number {
  const chars = request.messages.reduce((sum, m) => sum + m.role.length + (m.content ?? "").length, 0);
  return Math.max(1, Math.ceil(chars / 4));
}

/**
 * Token `i`'s logprob entry: the engine picks each word for certain (log probability 0), the other words are the
 * alternatives, as unlikely as a probability can be. Ids are the words' places in WORDS.
 */
function syntheticLogprob(i: number, text: string, top: number): TokenLogprob {
  const id = i % WORDS.length;
  const entry = (at: number, token: string, logprob: number) => ({ id: at, token, bytes: [...new TextEncoder().encode(token)], logprob });
  const others = WORDS.map((word, at) => entry(at, word, UNLIKELY_LOGPROB)).filter((e) => e.id !== id);
  return { ...entry(id, text, 0), top_logprobs: [entry(id, text, 0), ...others].slice(0, top) };
}

export class SyntheticEngine implements InferenceEngine {
  private readonly turn = new Slots();

  constructor(readonly options: SyntheticOptions) {}

  async *generate({ request }: Turn, signal?: AbortSignal): AsyncGenerator<GenerateEvent, void, void> {
    const release = await this.turn.acquire(signal);
    try {
      const count = Math.min(answerTokenCap(request), this.options.tokens);
      for (let i = 0; i < count; i++) {
        if (this.options.tokenMs > 0) await sleep(this.options.tokenMs, undefined, { signal });
        signal?.throwIfAborted();
        const text = `${i === 0 ? "" : " "}${WORDS[i % WORDS.length]}`;
        // asked for (a complete request asks for 0 alternatives), each token's entry comes just before its text
        if (request.top_logprobs !== undefined) yield { type: "logprobs", logprobs: [syntheticLogprob(i, text, request.top_logprobs)] };
        yield { type: "delta", text };
      }
      signal?.throwIfAborted();
      yield {
        type: "done",
        prompt_tokens: syntheticPromptTokens(request),
        cached_tokens: 0,
        completion_tokens: count,
        finish_reason: count < this.options.tokens ? "length" : "stop",
        model_sha256: this.options.sha256Of(request.model),
      };
    } finally {
      release();
    }
  }

  dispose(): Promise<void> {
    return Promise.resolve();
  }
}
