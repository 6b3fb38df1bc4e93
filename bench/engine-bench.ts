// Bench section 3, the engine: svc-agent's Engine against raw node-llama-cpp (the lowest-level loop: a context
// sequence evaluating the same prompt tokens with the same sampler options, seed, threads and context size) on the
// same GGUF, both loaded in this process and called in turn. Generation and prompt-processing tokens/s, and cold load.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { getLlama, resolveChatWrapper, type LlamaModel } from "node-llama-cpp";
import { DEFAULT_CONTEXT_SIZE, Engine } from "../agent/engine/engine.ts";
import { defaultThreads } from "../agent/daemon/machine.ts";
import { ModelStore } from "../agent/models/store.ts";
import { DEFAULT_MODELS_DIR } from "../agent/models/models-dir.ts";
import { renderPrompt } from "../agent/engine/prompt.ts";
import { planTurn, type GenerateRequest } from "../agent/engine/turn.ts";
import { samplerOptions } from "../agent/engine/sampler.ts";
import type { ChatMessage } from "../src/session/sealed-request.ts";
import type { Catalog } from "../src/catalog.ts";
import { loadCatalog } from "../src/catalog-file.ts";
import type { WrittenTinyCatalog } from "../tiny-model/catalog.ts";
import { percentile, type Table } from "./stats.ts";

const SHORT: ChatMessage[] = [{ role: "user", content: "Write a short story about a lighthouse keeper." }];
/** About 2,400 prompt tokens on the tiny model (its tokenizer is byte-level), for prompt processing. */
const LONG: ChatMessage[] = [{ role: "user", content: `Summarise this: ${"the keeper climbed the stairs and lit the lamp again. ".repeat(45)}` }];
/** Both sides' sampling: the engine's request, and for raw the evaluate() options the engine builds from it. */
const SAMPLING = { temperature: 0, seed: 1 } as const;
const request = (model: string, messages: ChatMessage[], maxTokens: number): GenerateRequest => ({ model, messages, max_tokens: maxTokens, ...SAMPLING });

interface Run {
  /** Generated tokens per second after the first token. */
  genTokS: number;
  /** Prompt tokens per second (prompt size / time to first token). */
  promptTokS: number;
}

export interface EngineResult {
  model: string;
  threads: number;
  tokens: number;
  engine: { genTokS: number; promptTokS: number; coldLoadMs: number };
  raw: { genTokS: number; promptTokS: number; coldLoadMs: number };
  genRatio: number;
  promptRatio: number;
  /** Every quartet's ratio, for the spread behind the medians. */
  quartets: { gen: number[]; prompt: number[] };
}

/**
 * Raw node-llama-cpp: load, one sequence, evaluate the rendered prompt with the engine's sampler options (the same
 * chain: greedy at temperature 0, no top-k, top-p 1, min-p 0, the same seed), stop at EOG (evaluate() does) or the budget, and
 * decode the answer's text once at the end.
 */
async function rawRunner(path: string, threads: number): Promise<Side> {
  // timed from getLlama, as the engine's own load is: a fresh backend instance, then model and context
  const started = performance.now();
  const llama = await getLlama({ gpu: "auto" });
  const model = await llama.loadModel({ modelPath: path });
  const context = await model.createContext({ contextSize: Math.min(model.trainContextSize, DEFAULT_CONTEXT_SIZE), threads, sequences: 1 });
  const coldLoadMs = performance.now() - started;
  const sequence = context.getSequence();
  const wrapper = resolveChatWrapper(model);
  const vocabularySize = model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length ?? 0;
  const run = async (messages: ChatMessage[], maxTokens: number) => {
    const options = samplerOptions(request("", messages, maxTokens), { tokenizer: model.tokenizer, vocabularySize, answer: [], budget: maxTokens });
    const t0 = performance.now();
    const prompt = renderPrompt(model, wrapper, messages);
    const out = [];
    let first = 0;
    // evaluate() ends by itself at an end-of-generation token, without yielding it
    for await (const token of sequence.evaluate(prompt, options)) {
      if (out.length === 0) first = performance.now();
      out.push(token);
      if (out.length >= maxTokens) break;
    }
    model.detokenize(out);
    const end = performance.now();
    await sequence.clearHistory();
    return { prompt: prompt.length, tokens: out.length, ttft: first - t0, gen: end - first };
  };
  return { coldLoadMs, run, dispose: async () => (await model.dispose(), await llama.dispose()) };
}

async function engineRun(engine: Engine, alias: string, messages: ChatMessage[], maxTokens: number, promptTokens: number) {
  const t0 = performance.now();
  let first = 0;
  let end = 0;
  let tokens = 0;
  for await (const event of engine.generate(planTurn(request(alias, messages, maxTokens)))) {
    if (event.type === "delta" && first === 0) first = performance.now();
    if (event.type === "done") {
      end = performance.now();
      tokens = event.completion_tokens;
    }
  }
  return { prompt: promptTokens, tokens, ttft: first - t0, gen: end - first };
}

/** Whole answer: completion tokens over the time from the call to the last token (the short prompt costs little). */
const rate = (r: { tokens: number; ttft: number; gen: number }) => (r.tokens / (r.ttft + r.gen)) * 1000;
const median = (xs: number[]) => percentile(xs, 50);

interface Side {
  coldLoadMs: number;
  /** One answer of at most `maxTokens`, timed. */
  run(messages: ChatMessage[], maxTokens: number): Promise<{ prompt: number; tokens: number; ttft: number; gen: number }>;
  dispose(): Promise<void>;
}

async function engineSide(store: ModelStore, alias: string, promptTokens: number): Promise<Side> {
  let coldLoadMs = Number.NaN;
  const engine = new Engine({ store, log: (line) => (coldLoadMs = Number(/ in (\d+) ms$/.exec(line)?.[1] ?? coldLoadMs)) });
  await engineRun(engine, alias, SHORT, 1, 0); // the cold load, timed by the engine's own log line
  return {
    coldLoadMs,
    run: (messages, maxTokens) => engineRun(engine, alias, messages, maxTokens, messages === LONG ? promptTokens : 0),
    dispose: () => engine.dispose(),
  };
}

async function compare(label: string, catalog: Catalog, modelsDir: string, alias: string, tokens: number, reps: number): Promise<EngineResult> {
  const store = new ModelStore({ catalog, modelsDir });
  const { path } = await store.verify(alias);
  const threads = defaultThreads(); // what the engine uses when --threads is not given
  await (await getLlama({ gpu: "auto" })).loadModel({ modelPath: path }).then((m: LlamaModel) => m.dispose()); // load llama.cpp itself first
  const probe = await rawRunner(path, threads);
  const promptTokens = (await probe.run(LONG, 1)).prompt;
  await probe.dispose();
  const samples = { engine: { gen: [] as number[], prompt: [] as number[], load: [] as number[] }, raw: { gen: [] as number[], prompt: [] as number[], load: [] as number[] } };
  const ratios = { gen: [] as number[], prompt: [] as number[] };
  // both sides loaded at once and called in turn, engine, raw, raw, engine: the machine's speed (here shared with
  // other work) drifts over seconds, so only calls next to each other compare; each quartet gives one ratio
  const rounds = reps > 10 ? 4 : 2;
  for (let round = 0; round < rounds; round++) {
    const engineFirst = round % 2 === 0;
    const first = engineFirst ? await engineSide(store, alias, promptTokens) : await rawRunner(path, threads);
    const second = engineFirst ? await rawRunner(path, threads) : await engineSide(store, alias, promptTokens);
    const [engine, raw] = engineFirst ? [first, second] : [second, first];
    samples.engine.load.push(engine.coldLoadMs);
    samples.raw.load.push(raw.coldLoadMs);
    await engine.run(SHORT, tokens); // warm
    await raw.run(SHORT, tokens);
    for (let i = 0; i < Math.ceil(reps / rounds / 2); i++) {
      const quartet = { gen: [] as number[], prompt: [] as number[] };
      for (const side of [engine, raw, raw, engine]) {
        quartet.gen.push(rate(await side.run(SHORT, tokens)));
        const r = await side.run(LONG, 1);
        quartet.prompt.push((r.prompt / r.ttft) * 1000);
      }
      for (const k of ["gen", "prompt"] as const) {
        const [e1, r1, r2, e2] = quartet[k] as [number, number, number, number];
        samples.engine[k].push(e1, e2);
        samples.raw[k].push(r1, r2);
        ratios[k].push((e1 + e2) / (r1 + r2));
      }
    }
    await engine.dispose();
    await raw.dispose();
  }
  const summary = (x: { gen: number[]; prompt: number[]; load: number[] }) => ({ genTokS: median(x.gen), promptTokS: median(x.prompt), coldLoadMs: median(x.load) });
  const e = summary(samples.engine);
  const w = summary(samples.raw);
  return { model: label, threads, tokens, engine: e, raw: w, genRatio: median(ratios.gen), promptRatio: median(ratios.prompt), quartets: ratios };
}

export async function engineBench(_dir: string, tiny: WrittenTinyCatalog, quick: boolean) {
  const results: EngineResult[] = [await compare("tiny-random (random weights)", tiny.catalog, tiny.modelsDir, tiny.catalog.default, 256, quick ? 10 : 40)];
  const bundled = loadCatalog();
  const present = bundled.models.find((m) => existsSync(join(DEFAULT_MODELS_DIR, m.file)));
  let note = "Real catalog model: none downloaded on this machine, so only the tiny model ran (svc-agent pull ALIAS adds one).";
  if (present) {
    results.push(await compare(present.alias, bundled, DEFAULT_MODELS_DIR, present.alias, quick ? 16 : 64, quick ? 2 : 5));
    note = `Real catalog model: ${present.alias} from ${DEFAULT_MODELS_DIR}.`;
  }
  const table: Table = {
    title: "3. Engine: svc-agent's engine vs raw node-llama-cpp, same GGUF, prompt, sampler options (temperature 0, seed 1), threads and context size",
    columns: ["model", "threads", "tok/s engine", "raw", "ratio", "prompt tok/s engine", "raw", "ratio", "cold load ms engine", "raw"],
    rows: results.map((r) => [r.model, r.threads, r.engine.genTokS, r.raw.genTokS, r.genRatio, r.engine.promptTokS, r.raw.promptTokS, r.promptRatio, r.engine.coldLoadMs, r.raw.coldLoadMs]),
    note: `Both sides loaded at once (${quick ? 2 : 4} times, the first loaded alternating) and called in turn, engine, raw, raw, engine: the rates are medians over every call, each ratio the median over the quartets' ratios (calls next to each other, so the machine's drift cancels). tok/s: completion tokens (${results[0]!.tokens}) over the whole call, short prompt. prompt: prompt tokens / time to first token (rendering included for both). The engine's cold load includes its SHA-256 check of the pinned file. ${note}`,
  };
  return { results, tables: [table] };
}
