// The agent's inference engine on node-llama-cpp (llama.cpp: Metal on a Mac, CPU elsewhere): loads a catalog
// alias's pinned GGUF lazily after checking its hash, runs one generation at a time, unloads when idle.
import { getLlama, resolveChatWrapper, type Llama, type LlamaGrammar, type LlamaModel } from "node-llama-cpp";
import { BoundedMap } from "../../src/bounded-map.ts";
import { ApiError } from "../../src/errors.ts";
import type { EmbeddingRequest, EmbeddingResult, Embeds, EngineStore, GenerateEvent, InferenceEngine } from "./inference.ts";
import { defaultThreads, memoryGb } from "../daemon/machine.ts";
import { Slots } from "./slots.ts";
import type { Turn, TurnGrammar } from "./turn.ts";
import { LoadedEmbedder } from "./embedder.ts";
import { runTurn, type Held, type Loaded } from "./generation.ts";
import { DEFAULT_GRAMMAR_BUDGET, slowCompile, type GrammarBudget } from "./grammar/grammar-guard.ts";
import { clearExpired } from "./cached-sequence.ts";
import { createCachedContext } from "./cache-context.ts";

export type { ChatMessage } from "../../src/session/sealed-request.ts";
export type { GenerateEvent } from "./inference.ts";

export const DEFAULT_KEEP_ALIVE_MS = 5 * 60_000;
import { DEFAULT_CONTEXT_SIZE } from "./context-size.ts";
export { DEFAULT_CONTEXT_SIZE };
/** How long a caller's conversation stays in the prompt cache after its last session (`--prompt-cache-ttl`). */
export const DEFAULT_PROMPT_CACHE_TTL_MS = 5 * 60_000;
/** Compiled response_format grammars kept, by schema text (a client sends the same few schemas again and again). */
export const GRAMMAR_CACHE_SIZE = 32;

export interface EngineOptions {
  store: EngineStore;
  /** llama.cpp CPU threads; defaults to the physical cores less one (see machine.ts). */
  threads?: number;
  /** Unload a model after this long unused (default 5 minutes; no command-line flag sets it). */
  keepAliveMs?: number;
  /** Context window per session (`--context-size`), capped by the model's training context. */
  contextSize?: number;
  /** node-llama-cpp GPU backend: "auto" picks Metal on a Mac, CPU where there is none. */
  gpu?: "auto" | "metal" | "cuda" | "vulkan" | false;
  /** llama.cpp's batch size (internal, no flag: issue 43's audit measurement runs honest providers at several). */
  batchSize?: number;
  /** `--prompt-cache-gb`: memory for other callers' conversations (default: a share of what the model leaves; 0: off). */
  promptCacheGb?: number;
  /** `--prompt-cache-ttl`: how long a conversation is kept after its last session. */
  promptCacheTtlMs?: number;
  /** `--memory-gb`: the memory the default cache budget is a share of. */
  memoryGb?: number;
  /** How long llama.cpp may take to build a grammar and to sample a token under one (tests shorten it). */
  grammarBudget?: GrammarBudget;
  log?: (line: string) => void;
}


export class Engine implements InferenceEngine, Embeds {
  private llama?: Promise<Llama>;
  private loaded?: Loaded;
  /** An embedding model takes the place of a chat model: at most one of the two is loaded. */
  private embedder?: LoadedEmbedder;
  private readonly turn = new Slots();
  private idleTimer?: NodeJS.Timeout;
  private expiryTimer?: NodeJS.Timeout;
  /** Compiled grammars by schema text, least recently used first; they belong to the llama instance, not to a model. */
  private readonly grammars = new BoundedMap<string, Promise<LlamaGrammar>>(GRAMMAR_CACHE_SIZE);
  /** How many grammars were compiled; tests use it to see the cache. */
  grammarCompiles = 0;
  /** How many times a model file was loaded; tests use it to see laziness and reuse. */
  loads = 0;

  constructor(private readonly options: EngineOptions) {}

  get loadedAlias(): string | undefined {
    return this.loaded?.alias ?? this.embedder?.alias;
  }

  /** True while a generation holds the engine (SPEC §2.4 `busy`). */
  get busy(): boolean {
    return this.turn.busy;
  }

  /** Generations queued behind the current one (SPEC §2.4 `waiting`). */
  get waiting(): number {
    return this.turn.waiting;
  }

  /** Caller conversations the prompt cache holds now; tests use it to see eviction and the TTL. */
  get cachedConversations(): number {
    return this.loaded?.cache.held ?? 0;
  }

  private get grammarBudget(): GrammarBudget {
    return this.options.grammarBudget ?? DEFAULT_GRAMMAR_BUDGET;
  }

  get threads(): number {
    return this.options.threads ?? defaultThreads();
  }

  /**
   * Streams the turn's answer pieces, then one `done` record. Throws the signal's reason when aborted. The turn's
   * own generator is returned, holding the engine while it runs: a generator layer here would cost every token.
   */
  generate(turn: Turn, signal?: AbortSignal): AsyncGenerator<GenerateEvent, void, void> {
    const grammars = { compiled: (plan: TurnGrammar) => this.grammarFor(plan), budget: this.grammarBudget };
    return runTurn(() => this.hold(turn.request.model, signal), turn, signal, grammars);
  }

  /** The engine for one generation: its turn taken, the alias loaded; released when the generation ends. */
  private async hold(alias: string, signal: AbortSignal | undefined): Promise<Held> {
    const release = await this.turn.acquire(signal);
    clearTimeout(this.idleTimer);
    const done = () => {
      release();
      this.scheduleUnload();
      this.scheduleExpiry();
    };
    try {
      const loaded = await this.load(alias);
      signal?.throwIfAborted();
      return { loaded, release: done };
    } catch (err) {
      done();
      throw err;
    }
  }

  /** Embeds every input of one request under the one-session lock, loading the alias's model as `generate` does. */
  async embed(request: EmbeddingRequest, signal?: AbortSignal): Promise<EmbeddingResult> {
    const release = await this.turn.acquire(signal);
    clearTimeout(this.idleTimer);
    try {
      if (this.embedder?.alias !== request.model) {
        await this.unloadNow();
        const { model, sha256 } = await this.open(request.model);
        this.embedder = await LoadedEmbedder.create(request.model, sha256, model, {
          contextSize: this.options.contextSize ?? DEFAULT_CONTEXT_SIZE,
          threads: this.threads,
        });
        this.loads++;
        this.options.log?.(`loaded ${request.model} (embeddings, ${this.threads} threads)`);
      }
      signal?.throwIfAborted();
      return await this.embedder.embed(request, signal);
    } finally {
      release();
      this.scheduleUnload();
    }
  }

  /**
   * A grammar compiled once per key (a client sends the same few schemas and tools again and again). One that cost too
   * much to build stays refused: building it again would cost the event loop as much again.
   */
  private async grammarFor(plan: TurnGrammar): Promise<LlamaGrammar> {
    const kept = this.grammars.touch(plan.key);
    if (kept !== undefined) return kept;
    const grammar = this.compile(plan);
    grammar.catch((err: unknown) => {
      if (!(err instanceof ApiError && err.code === "schema_too_complex")) this.grammars.delete(plan.key);
    });
    this.grammars.set(plan.key, grammar);
    return grammar;
  }

  private async compile({ build, param }: TurnGrammar): Promise<LlamaGrammar> {
    this.grammarCompiles++;
    const llama = await this.llama!;
    const started = performance.now();
    let grammar: LlamaGrammar;
    try {
      grammar = await llama.createGrammar({ grammar: await build(llama) });
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw new ApiError("invalid_value", `${param} cannot be compiled into a grammar: ${(err as Error).message}`, { param });
    }
    const slow = slowCompile(this.grammarBudget, param, performance.now() - started);
    if (slow !== undefined) {
      this.options.log?.(`refused a grammar for ${param}: ${slow.message}`);
      throw slow;
    }
    return grammar;
  }

  /** Loads the alias (verifying its file first) unless it is the one already loaded. Caller holds the turn. */
  private async load(alias: string): Promise<Loaded> {
    if (this.loaded?.alias === alias) return this.loaded;
    await this.unloadNow();
    const started = performance.now();
    const { model, sha256 } = await this.open(alias);
    try {
      const { context, cache, keeps } = await createCachedContext(model, {
        contextSize: Math.min(model.trainContextSize, this.options.contextSize ?? DEFAULT_CONTEXT_SIZE),
        threads: this.threads,
        ...(this.options.batchSize === undefined ? {} : { batchSize: this.options.batchSize }),
        gb: this.options.promptCacheGb,
        memoryGb: memoryGb(this.options.memoryGb),
        ttlMs: this.options.promptCacheTtlMs ?? DEFAULT_PROMPT_CACHE_TTL_MS,
      });
      const wrapper = resolveChatWrapper(model);
      // what node-llama-cpp itself counts tokens by; llama.cpp loads no GGUF without it
      const vocabularySize = model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length;
      if (vocabularySize === undefined) throw new Error(`${alias}: the GGUF lists no tokenizer.ggml.tokens`);
      this.loaded = { alias, sha256, model, vocabularySize, wrapper, context, keeps, cache };
    } catch (err) {
      await model.dispose();
      throw err;
    }
    this.loads++;
    const ms = Math.round(performance.now() - started);
    const held = this.loaded.keeps ? `prompt cache of ${this.loaded.cache.size} conversation${this.loaded.cache.size === 1 ? "" : "s"}` : "prompt cache off";
    this.options.log?.(`loaded ${alias} (${this.loaded.wrapper.wrapperName} chat wrapper, ${this.threads} threads, ${held}) in ${ms} ms`);
    return this.loaded;
  }

  /** The alias's file, its hash checked, loaded into llama.cpp (the caller holds the turn, and owns the model). */
  private async open(alias: string): Promise<{ model: LlamaModel; sha256: string }> {
    const { path, sha256 } = await this.options.store.verify(alias);
    this.llama ??= getLlama({ gpu: this.options.gpu ?? "auto" });
    const llama = await this.llama;
    return { model: await llama.loadModel({ modelPath: path }), sha256 };
  }

  /** A conversation goes from memory when its TTL passes, not only when the next session looks. */
  private scheduleExpiry(): void {
    clearTimeout(this.expiryTimer);
    const next = this.loaded?.cache.nextExpiry();
    if (next === undefined) return;
    this.expiryTimer = setTimeout(() => void this.expireWhenFree(), Math.max(0, next - Date.now()));
    this.expiryTimer.unref();
  }

  private async expireWhenFree(): Promise<void> {
    const release = await this.turn.acquire();
    try {
      if (this.loaded) await clearExpired(this.loaded.cache, Date.now());
    } finally {
      release();
      this.scheduleExpiry();
    }
  }

  private scheduleUnload(): void {
    clearTimeout(this.idleTimer);
    if (!this.loaded && !this.embedder) return;
    this.idleTimer = setTimeout(() => void this.unloadWhenFree(), this.options.keepAliveMs ?? DEFAULT_KEEP_ALIVE_MS);
    this.idleTimer.unref(); // an idle model must not keep the process alive
  }

  private async unloadWhenFree(): Promise<void> {
    const release = await this.turn.acquire();
    try {
      const alias = this.loadedAlias;
      await this.unloadNow();
      if (alias) this.options.log?.(`unloaded ${alias} after ${this.options.keepAliveMs ?? DEFAULT_KEEP_ALIVE_MS} ms idle`);
    } finally {
      release();
    }
  }

  private async unloadNow(): Promise<void> {
    const { embedder } = this;
    this.embedder = undefined;
    await embedder?.dispose();
    const loaded = this.loaded;
    this.loaded = undefined;
    if (!loaded) return;
    loaded.logprobs?.dispose(); // its samplers hold the model
    await loaded.context.dispose();
    await loaded.model.dispose();
  }

  /** Unloads everything and releases llama.cpp. */
  async dispose(): Promise<void> {
    clearTimeout(this.idleTimer);
    clearTimeout(this.expiryTimer);
    const release = await this.turn.acquire();
    try {
      await this.unloadNow();
      this.grammars.clear();
      if (this.llama) await (await this.llama).dispose();
      this.llama = undefined;
    } finally {
      release();
    }
  }
}

