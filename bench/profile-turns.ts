// Where an agent turn's time to first token goes inside the agent (issue 30): section 7's conversation (one caller,
// cache on) through the engine in this process, with each step before the first token timed on its own, next to
// node-llama-cpp's LlamaChatSession on the same GGUF. `npx tsx bench/profile-turns.ts [--turns 8] [--rounds 3]
// [--long-prefix]` (section 7e's conversation, after a coding agent's long system prompt).
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { LlamaContextSequence, type Token } from "node-llama-cpp";
import { Engine } from "../agent/engine/engine.ts";
import { planTurn, type GenerateRequest } from "../agent/engine/turn.ts";
import { qwenWrapper, renderTurnPrompt } from "../agent/engine/prompt.ts";
import { ModelStore } from "../agent/models/store.ts";
import { writeTinyCatalog } from "../tiny-model/catalog.ts";
import { openRequest, sealingKeyPair, sealRequest } from "../src/crypto/seal.ts";
import { parseSessionPlaintext } from "../src/session/sealed-request.ts";
import { conversation, LONG_PREFIX, SHORT, TOOLS } from "./agent-conversation.ts";
import { openAnchor } from "./agent-turns.ts";

const { values } = parseArgs({ options: { turns: { type: "string", default: "8" }, rounds: { type: "string", default: "3" }, "long-prefix": { type: "boolean", default: false } } });
const shape = values["long-prefix"] ? LONG_PREFIX : SHORT;
const turns = Number(values.turns);
const rounds = Number(values.rounds);

const dir = mkdtempSync(join(os.tmpdir(), "svc-profile-turns-"));
const tiny = writeTinyCatalog(join(dir, "tiny"), [{ alias: "tiny-random", seed: 7, endOfTurn: "never" }], "svc-bench");
const alias = tiny.catalog.default;

// when the engine's sequence yields its first token: the prompt's new tokens evaluated and one token sampled
let evalStarted = 0;
let firstToken = 0;
const keys = await sealingKeyPair(new Uint8Array(32).fill(7));
const evaluate = LlamaContextSequence.prototype.evaluate;
LlamaContextSequence.prototype.evaluate = async function* (this: LlamaContextSequence, tokens: Token[], options?: object) {
  evalStarted = performance.now();
  firstToken = 0;
  for await (const token of evaluate.call(this, tokens, options as never)) {
    firstToken ||= performance.now();
    yield token;
  }
} as typeof evaluate;

const ms = (a: number, b: number) => Math.round((b - a) * 10) / 10;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

interface Steps { body: number; plan: number; render: number; tokenize: number; toEval: number; prefill: number; ttft: number; prompt: number; cached: number }

async function engineRound(scope: string): Promise<Steps[]> {
  const engine = new Engine({ store: new ModelStore({ catalog: tiny.catalog, modelsDir: tiny.modelsDir }), gpu: false, contextSize: shape.contextSize });
  const out: Steps[] = [];
  try {
    for await (const _ of engine.generate(planTurn({ model: alias, messages: [{ role: "user", content: "warm up" }], max_tokens: 1, temperature: 0 }))) void _;
    for (let turn = 1; turn <= turns; turn++) {
      const request = { model: alias, messages: conversation(0, turn, shape), tools: TOOLS, max_tokens: 8, temperature: 0, cache_scope: scope } as unknown as GenerateRequest;
      // what grows with the body on the way in: the caller's JSON read, sealed to the agent, opened and parsed there
      const b0 = performance.now();
      const text = JSON.stringify({ ...request, cache_scope: undefined });
      const { sealed } = await sealRequest(keys.publicKey, "session", Buffer.from(JSON.stringify({ ...JSON.parse(text), cache_scope: scope, client_nonce: null, nonce: "0".repeat(32) })));
      parseSessionPlaintext(JSON.parse((await openRequest(keys, "session", sealed)).plaintext.toString("utf8")));
      const b1 = performance.now();
      // the steps alone, on the same inputs (the engine repeats them below, which is what the TTFT column times)
      const t0 = performance.now();
      const turnPlan = planTurn(request);
      const t1 = performance.now();
      const plan = turnPlan.prompt;
      if (plan.form !== "qwen") throw new Error("expected Qwen3's tool form");
      const { contextText } = qwenWrapper({ reasoning: turnPlan.thinks }).generateContextState({ chatHistory: plan.history, ...(plan.functions ? { availableFunctions: plan.functions } : {}) });
      const t2 = performance.now();
      const model = (engine as unknown as { loaded: { model: Parameters<typeof renderTurnPrompt>[0] } }).loaded.model;
      contextText.tokenize(model.tokenizer);
      const t3 = performance.now();
      // the whole engine path: plan, render, tokenize, open the cached sequence, prefill, first token
      const started = performance.now();
      let done: { prompt_tokens: number; cached_tokens?: number } | undefined;
      for await (const event of engine.generate(planTurn(request))) if (event.type === "done") done = event;
      out.push({
        body: ms(b0, b1), plan: ms(t0, t1), render: ms(t1, t2), tokenize: ms(t2, t3),
        toEval: ms(started, evalStarted), prefill: ms(evalStarted, firstToken), ttft: ms(started, firstToken),
        prompt: done!.prompt_tokens, cached: done!.cached_tokens ?? 0,
      });
    }
  } finally {
    await engine.dispose();
  }
  return out;
}

try {
  const engineRuns: Steps[][] = [];
  const anchorRuns: { ttftMs: number; prompt: number; cached: number }[][] = [];
  for (let r = 0; r < rounds; r++) {
    engineRuns.push(await engineRound(`${"a".repeat(60)}${r.toString(16).padStart(4, "0")}`));
    const side = await openAnchor(tiny, shape);
    const run = [];
    for (let t = 1; t <= turns; t++) run.push(await side.turn(t));
    await side.close();
    anchorRuns.push(run);
  }
  console.log(`load average ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}; medians of ${rounds} rounds (ms)`);
  console.log("| turn | prompt | cached | body: JSON, seal, open, zod | plan | render | tokenize | start → evaluate | prefill + 1st token | engine TTFT | anchor prompt / kept | anchor TTFT |");
  console.log("|---|---|---|---|---|---|---|---|---|---|---|---|");
  for (let t = 0; t < turns; t++) {
    const col = (f: (s: Steps) => number) => median(engineRuns.map((run) => f(run[t]!)));
    const a = anchorRuns[0]![t]!;
    console.log(`| ${t + 1} | ${col((s) => s.prompt)} | ${col((s) => s.cached)} | ${col((s) => s.body)} | ${col((s) => s.plan)} | ${col((s) => s.render)} | ${col((s) => s.tokenize)} | ${col((s) => s.toEval)} | ${col((s) => s.prefill)} | ${col((s) => s.ttft)} | ${a.prompt} / ${a.cached} | ${ms(0, median(anchorRuns.map((run) => run[t]!.ttftMs)))} |`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
