// Bench section 3, the engine, its second table (issue 43): what logprobs cost. One Engine per model generates the
// same answer with none asked for, and with top_logprobs 0, 5 and 20, called in turn (forward, then backward, so the
// machine's drift cancels); tokens per second for each, and each one's ratio to none's next to it. On the tiny model
// (a few hundred tokens) and on the same model padded to Qwen3's 151,936-token vocabulary, since reading a token's probability
// costs a pass over the whole vocabulary's logits.
import { join } from "node:path";
import { readGgufFileInfo } from "node-llama-cpp";
import { Engine } from "../agent/engine/engine.ts";
import { defaultThreads } from "../agent/daemon/machine.ts";
import { ModelStore } from "../agent/models/store.ts";
import { planTurn, type GenerateRequest } from "../agent/engine/turn.ts";
import { writeTinyCatalog } from "../tiny-model/catalog.ts";
import { percentile, type Table } from "./stats.ts";

/** What a request asks for: none, or that many alternatives per position. */
const MODES = [{ label: "none" }, { label: "top_logprobs 0", top: 0 }, { label: "top_logprobs 5", top: 5 }, { label: "top_logprobs 20", top: 20 }] as const;
const QWEN3_VOCABULARY = 151_936;

export interface LogprobsResult {
  model: string;
  vocabulary: number;
  threads: number;
  tokens: number;
  /** Median tokens/s per mode, and each mode's median ratio to none (calls next to each other). */
  modes: { label: string; tokS: number; ratio: number }[];
}

async function measure(engine: Engine, alias: string, top: number | undefined, tokens: number): Promise<number> {
  const request: GenerateRequest = {
    model: alias,
    messages: [{ role: "user", content: "Write a short story about a lighthouse keeper." }],
    max_tokens: tokens,
    temperature: 0,
    seed: 1,
    ...(top === undefined ? {} : { top_logprobs: top }),
  };
  const t0 = performance.now();
  let completion = 0;
  for await (const event of engine.generate(planTurn(request))) if (event.type === "done") completion = event.completion_tokens;
  return (completion / (performance.now() - t0)) * 1000;
}

async function bench(store: ModelStore, alias: string, tokens: number, reps: number): Promise<LogprobsResult> {
  const threads = defaultThreads();
  const vocabulary = (await readGgufFileInfo((await store.verify(alias)).path)).metadata.tokenizer?.ggml?.tokens?.length ?? 0;
  const engine = new Engine({ store, threads });
  try {
    for (const mode of MODES) await measure(engine, alias, "top" in mode ? mode.top : undefined, 8); // load, and warm each path
    const rates = MODES.map(() => [] as number[]);
    const ratios = MODES.map(() => [] as number[]);
    for (let rep = 0; rep < reps; rep++) {
      // forward, then backward: each mode has a call of none's beside it in one of the two
      const order = rep % 2 === 0 ? [...MODES.keys()] : [...MODES.keys()].reverse();
      const round: number[] = [];
      for (const i of order) round[i] = await measure(engine, alias, "top" in MODES[i]! ? (MODES[i] as { top: number }).top : undefined, tokens);
      round.forEach((rate, i) => (rates[i]!.push(rate), ratios[i]!.push(rate / round[0]!)));
    }
    return { model: alias, vocabulary, threads, tokens, modes: MODES.map((m, i) => ({ label: m.label, tokS: percentile(rates[i]!, 50), ratio: percentile(ratios[i]!, 50) })) };
  } finally {
    await engine.dispose();
  }
}

export async function logprobsBench(dir: string, quick: boolean): Promise<{ results: LogprobsResult[]; tables: Table[] }> {
  const tiny = writeTinyCatalog(join(dir, "logprobs"), [
    { alias: "tiny-random", seed: 7, endOfTurn: "never" },
    { alias: "tiny-random-qwen3-vocabulary", seed: 7, endOfTurn: "never", vocabularySize: QWEN3_VOCABULARY },
  ], "svc-bench");
  const tokens = quick ? 64 : 128;
  const reps = quick ? 4 : 12;
  const store = new ModelStore({ catalog: tiny.catalog, modelsDir: tiny.modelsDir });
  const results = [await bench(store, "tiny-random", tokens, reps), await bench(store, "tiny-random-qwen3-vocabulary", tokens, reps)];
  const table: Table = {
    title: "3b. Engine: tokens/s with and without logprobs (issue 43), same engine, model, prompt and sampling (temperature 0, seed 1)",
    columns: ["model", "vocabulary", "threads", ...MODES.flatMap((m) => (m.label === "none" ? ["tok/s none"] : [`tok/s ${m.label}`, "ratio"]))],
    rows: results.map((r) => [r.model, r.vocabulary, r.threads, ...r.modes.flatMap((m) => (m.label === "none" ? [m.tokS] : [m.tokS, m.ratio]))]),
    note: `${tokens} completion tokens a call over the whole call, short prompt; the modes called in turn, forward then backward, ${reps} rounds; each ratio the median of a mode's rate over none's in the same round. "none" is a request without logprobs: the engine then leaves node-llama-cpp's sampling untouched, the path table 3 compares with raw node-llama-cpp. The second model is the first padded with never-chosen control tokens to Qwen3's ${QWEN3_VOCABULARY.toLocaleString("en")} tokens: reading a token's probability passes over every logit (node-llama-cpp sorts them for its confidence), so that is where logprobs cost.`,
  };
  return { results, tables: [table] };
}
