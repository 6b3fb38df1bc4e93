// The agent's guard on llama.cpp's grammar work as it happens (issue 41), on real llama.cpp with the tiny model: grammars
// the static count (src/schema/grammar-work.ts) would refuse are built here without it, as if a gateway had let them
// through and the count had missed them. The session ends as the caller's schema_too_complex, the event loop (where the
// agent's heartbeats and SIGTERM are heard) stays free while llama.cpp samples, and the engine serves the next session.
import type { Llama } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Engine } from "../../../../agent/engine/engine.ts";
import type { Turn } from "../../../../agent/engine/turn.ts";
import { ModelStore } from "../../../../agent/models/store.ts";
import { ApiError } from "../../../../src/errors.ts";
import { SCHEMA_PARAM } from "../../../../src/schema/schema-fault.ts";
import { askEngine, collect } from "../../../fixtures/engine-request.ts";
import { ambiguousNesting, branchingChain } from "../../../fixtures/schema-attacks.ts";
import { makeTinyCatalog } from "../../../fixtures/tiny-catalog.ts";

const tiny = makeTinyCatalog([{ alias: "qwen3-4b", seed: 1 }]);
const store = new ModelStore({ catalog: tiny.catalog, modelsDir: tiny.modelsDir });
const engines: Engine[] = [];
/** An engine with a grammar budget shorter than the default, so the test reaches it in seconds. */
function engineWith(budget: { compileMs: number; tokenMs: number }): Engine {
  const engine = new Engine({ store, gpu: false, threads: 1, grammarBudget: { ...budget, tokenFactor: 20 } });
  engines.push(engine);
  return engine;
}
afterAll(async () => {
  for (const engine of engines) await engine.dispose();
  tiny.cleanup();
});

/** A JSON turn whose grammar is node-llama-cpp's own for `schema`, built without svc's preparation or count. */
function uncounted(schema: Record<string, unknown>, key: string): Turn {
  const turn = askEngine({ seed: 1, temperature: 0.8, max_tokens: 400, response_format: { type: "json_schema", json_schema: { name: "t", schema: { type: "object" } } } });
  const build = async (llama: Llama) => (await llama.createGrammarForJsonSchema(schema as never)).grammar;
  return { ...turn, grammar: { ...turn.grammar!, key, build } };
}

async function failure(run: Promise<unknown>): Promise<ApiError> {
  const error = await run.then(() => undefined, (err: unknown) => err);
  if (error instanceof ApiError) return error;
  throw new Error(`expected an ApiError, got ${String(error)}`);
}

/** The longest the event loop went without running a timer while `work` ran. */
async function loopGap<T>(work: () => Promise<T>): Promise<{ result: T; gapMs: number }> {
  let last = performance.now();
  let gapMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    gapMs = Math.max(gapMs, now - last);
    last = now;
  }, 20);
  try {
    return { result: await work(), gapMs };
  } finally {
    clearInterval(timer);
  }
}

describe("Grammar guard on the engine (issue 41): sampling", () => {
  const engine = engineWith({ compileMs: 10_000, tokenMs: 1_000 });
  // loading llama.cpp and the model is the engine's own work on the event loop, not the grammar's
  beforeAll(() => collect(engine.generate(askEngine({ max_tokens: 1 }))), 60_000);

  it("branches that begin alike, nested: the session ends at the first token past the budget, as schema_too_complex; the event loop ran meanwhile", async () => {
    const { result: error, gapMs } = await loopGap(() => failure(collect(engine.generate(uncounted(ambiguousNesting(22), "ambiguous")))));
    expect([error.status, error.code, error.param]).toEqual([400, "schema_too_complex", SCHEMA_PARAM]);
    const slowest = Number(/its grammar took ([\d.]+) s to sample token/.exec(error.message)?.[1]) * 1000;
    expect(slowest).toBeGreaterThan(1_000);
    // llama.cpp sampled that token on a thread of its own: the loop never waited on it
    expect(gapMs).toBeLessThan(slowest);
  }, 120_000);

  it("the engine serves the next session at once, under a grammar and without", async () => {
    const json = await collect(engine.generate(askEngine({ seed: 2, max_tokens: 40, response_format: { type: "json_object" } })));
    expect(json.done.completion_tokens).toBeGreaterThan(0);
    const plain = await collect(engine.generate(askEngine({ seed: 2, max_tokens: 8 })));
    expect(plain.done.completion_tokens).toBe(8);
  }, 60_000);
});

describe("Grammar guard on the engine (issue 41): building", () => {
  const engine = engineWith({ compileMs: 20, tokenMs: 2_000 });

  it("a grammar that took longer to build than the budget is schema_too_complex, and stays refused without another build", async () => {
    // 2^22 leading paths: llama.cpp walks them all on the event loop (about 100 ms on a quiet machine)
    const turn = uncounted(branchingChain(20), "chain");
    const first = await failure(collect(engine.generate(turn)));
    expect([first.status, first.code, first.param]).toEqual([400, "schema_too_complex", SCHEMA_PARAM]);
    expect(first.message).toMatch(/its grammar took [\d.]+ s to build/);
    const compiles = engine.grammarCompiles;
    const again = await failure(collect(engine.generate(turn)));
    expect(again.code).toBe("schema_too_complex");
    expect(engine.grammarCompiles).toBe(compiles);
  }, 60_000);
});
