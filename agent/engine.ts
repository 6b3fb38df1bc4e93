// The agent's inference engine on node-llama-cpp (llama.cpp: Metal on a Mac, CPU elsewhere): loads a catalog
// alias's pinned GGUF lazily after checking its hash, runs one generation at a time, unloads when idle.
import {
  getLlama,
  resolveChatWrapper,
  type ChatWrapper,
  type Llama,
  type LlamaContext,
  type LlamaContextSequence,
  type LlamaModel,
  type Token,
} from "node-llama-cpp";
import { ApiError } from "../src/errors.ts";
import type { FinishReason } from "../src/receipt.ts";
import type { GenerateEvent, GenerateRequest, InferenceEngine } from "./inference.ts";
import { defaultThreads } from "./machine.ts";
import type { ModelStore } from "./model-store.ts";
import { Slots } from "../src/slots.ts";
import { renderPrompt } from "./prompt.ts";
import { penalised, samplerOptions } from "./sampler.ts";
import { StopBuffer } from "./stop-buffer.ts";
import { TokenText } from "./token-text.ts";

export type { ChatMessage } from "../src/session-protocol.ts";
export type { GenerateEvent, GenerateRequest } from "./inference.ts";

export const DEFAULT_KEEP_ALIVE_MS = 5 * 60_000;
export const DEFAULT_CONTEXT_SIZE = 8192;

export interface EngineOptions {
  store: ModelStore;
  /** llama.cpp CPU threads; defaults to the physical cores less one (see machine.ts). */
  threads?: number;
  /** Unload a model after this long unused (`--keep-alive`). */
  keepAliveMs?: number;
  /** Context window per session, capped by the model's training context. */
  contextSize?: number;
  /** node-llama-cpp GPU backend: "auto" picks Metal on a Mac, CPU where there is none. */
  gpu?: "auto" | "metal" | "cuda" | "vulkan" | false;
  log?: (line: string) => void;
}

interface Loaded {
  alias: string;
  sha256: string;
  model: LlamaModel;
  /** Token ids run from 0 to this less one (what logit_bias may name). */
  vocabularySize: number;
  wrapper: ChatWrapper;
  context: LlamaContext;
  sequence: LlamaContextSequence;
}

export class Engine implements InferenceEngine {
  private llama?: Promise<Llama>;
  private loaded?: Loaded;
  private readonly turn = new Slots();
  private idleTimer?: NodeJS.Timeout;
  /** How many times a model file was loaded; tests use it to see laziness and reuse. */
  loads = 0;

  constructor(private readonly options: EngineOptions) {}

  get loadedAlias(): string | undefined {
    return this.loaded?.alias;
  }

  /** True while a generation holds the engine (SPEC §2.4 `busy`). */
  get busy(): boolean {
    return this.turn.busy;
  }

  /** Generations queued behind the current one (SPEC §2.4 `waiting`). */
  get waiting(): number {
    return this.turn.waiting;
  }

  get threads(): number {
    return this.options.threads ?? defaultThreads();
  }

  /** Streams text deltas, then one `done` record. Throws the signal's reason when aborted. */
  async *generate(request: GenerateRequest): AsyncGenerator<GenerateEvent, void, void> {
    const { signal } = request;
    const release = await this.turn.acquire(signal);
    clearTimeout(this.idleTimer);
    try {
      const loaded = await this.load(request.model);
      signal?.throwIfAborted();
      yield* this.run(loaded, request);
    } finally {
      release();
      this.scheduleUnload();
    }
  }

  private async *run(loaded: Loaded, request: GenerateRequest): AsyncGenerator<GenerateEvent, void, void> {
    const { model, sequence } = loaded;
    const prompt = renderPrompt(model, loaded.wrapper, request.messages);
    const room = sequence.contextSize - prompt.length;
    if (room < 1) {
      throw new ApiError(
        "context_length_exceeded",
        `The prompt is ${prompt.length} tokens; ${loaded.alias} serves at most ${sequence.contextSize} tokens of prompt and answer together.`,
        { param: "messages" },
      );
    }
    // Like llama-server: a max_tokens that overruns the context ends the answer at the context's edge.
    const budget = Math.min(request.max_tokens, room);
    const answer: Token[] = [];
    const options = samplerOptions(request, { tokenizer: model.tokenizer, vocabularySize: loaded.vocabularySize, answer, budget });
    const keepAnswer = penalised(request);
    const text = new TokenText(model);
    const stops = request.stop === undefined ? undefined : new StopBuffer(request.stop);
    let completion = 0;
    // evaluate() ends on its own only when the model samples an end-of-generation token
    let finish: FinishReason = budget > 0 ? "stop" : "length";
    let stopped = false;
    try {
      if (budget > 0) {
        for await (const token of sequence.evaluate(prompt, options)) {
          if (request.signal?.aborted || model.isEogToken(token)) break;
          // like llama-server, the tokens that made up a stop sequence count as completion tokens
          completion++;
          if (keepAnswer) answer.push(token);
          let delta = text.push(token);
          if (stops) ({ text: delta, stopped } = stops.push(delta));
          if (delta !== "") yield { type: "delta", text: delta };
          if (stopped) break;
          if (completion >= budget) {
            finish = "length";
            break;
          }
        }
      }
      request.signal?.throwIfAborted();
      if (!stopped) {
        let rest = text.flush();
        if (stops) ({ text: rest, stopped } = stops.push(rest));
        if (stopped) finish = "stop";
        else if (stops) rest += stops.flush();
        if (rest !== "") yield { type: "delta", text: rest };
      }
      yield {
        type: "done",
        prompt_tokens: prompt.length,
        completion_tokens: completion,
        finish_reason: finish,
        model_sha256: loaded.sha256,
      };
    } finally {
      // every session starts from an empty context: nothing of one caller's prompt stays for the next
      await sequence.clearHistory();
    }
  }

  /** Loads the alias (verifying its file first) unless it is the one already loaded. Caller holds the turn. */
  private async load(alias: string): Promise<Loaded> {
    if (this.loaded?.alias === alias) return this.loaded;
    await this.unloadNow();
    const { path, sha256 } = await this.options.store.verify(alias);
    const started = performance.now();
    this.llama ??= getLlama({ gpu: this.options.gpu ?? "auto" });
    const llama = await this.llama;
    const model = await llama.loadModel({ modelPath: path });
    try {
      const context = await model.createContext({
        contextSize: Math.min(model.trainContextSize, this.options.contextSize ?? DEFAULT_CONTEXT_SIZE),
        threads: this.threads,
        sequences: 1,
      });
      const wrapper = resolveChatWrapper(model);
      // what node-llama-cpp itself counts tokens by; llama.cpp loads no GGUF without it
      const vocabularySize = model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length;
      if (vocabularySize === undefined) throw new Error(`${alias}: the GGUF lists no tokenizer.ggml.tokens`);
      this.loaded = { alias, sha256, model, vocabularySize, wrapper, context, sequence: context.getSequence() };
    } catch (err) {
      await model.dispose();
      throw err;
    }
    this.loads++;
    const ms = Math.round(performance.now() - started);
    this.options.log?.(`loaded ${alias} (${this.loaded.wrapper.wrapperName} chat wrapper, ${this.threads} threads) in ${ms} ms`);
    return this.loaded;
  }

  private scheduleUnload(): void {
    clearTimeout(this.idleTimer);
    if (!this.loaded) return;
    this.idleTimer = setTimeout(() => void this.unloadWhenFree(), this.options.keepAliveMs ?? DEFAULT_KEEP_ALIVE_MS);
    this.idleTimer.unref(); // an idle model must not keep the process alive
  }

  private async unloadWhenFree(): Promise<void> {
    const release = await this.turn.acquire();
    try {
      const alias = this.loaded?.alias;
      await this.unloadNow();
      if (alias) this.options.log?.(`unloaded ${alias} after ${this.options.keepAliveMs ?? DEFAULT_KEEP_ALIVE_MS} ms idle`);
    } finally {
      release();
    }
  }

  private async unloadNow(): Promise<void> {
    const loaded = this.loaded;
    this.loaded = undefined;
    if (!loaded) return;
    await loaded.context.dispose();
    await loaded.model.dispose();
  }

  /** Unloads everything and releases llama.cpp. */
  async dispose(): Promise<void> {
    clearTimeout(this.idleTimer);
    const release = await this.turn.acquire();
    try {
      await this.unloadNow();
      if (this.llama) await (await this.llama).dispose();
      this.llama = undefined;
    } finally {
      release();
    }
  }
}
