// `svc-agent rescore` (issue 43 items 2 and 4; AUDIT-DESIGN §6), the gateway's auditor's reference pass, as the real
// child process it spawns, on the tiny model: one job a line on stdin, one result a line on stdout
// (src/audit/rescore-job.ts). An honest provider's answer re-scores within the audit's tolerance, another seed's
// does not; a job that cannot be scored is answered with why, and the process reads on; a model file that is not the
// alias's pin is refused at start, as a usage error naming --model.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Engine } from "../../agent/engine/engine.ts";
import { planTurn } from "../../agent/engine/turn.ts";
import { ModelStore } from "../../agent/models/store.ts";
import { runCli } from "../../harness/cli.ts";
import { AGENT_BIN, startProcess } from "../../harness/process.ts";
import { RescoreResultSchema, type RescoreJob, type RescoreResult } from "../../src/audit/rescore-job.ts";
import { auditStatistic } from "../../src/audit/statistic.ts";
import { AUDIT_FAIL_MEAN, auditVerdict } from "../../src/audit/thresholds.ts";
import { canonicalJson } from "../../src/receipt/canonical-json.ts";
import type { TokenLogprob } from "../../src/receipt/logprobs.ts";
import { parseSessionPlaintext } from "../../src/session/sealed-request.ts";
import { collect } from "../fixtures/engine-request.ts";
import { makeTinyCatalog } from "../fixtures/tiny-catalog.ts";

const pinned = makeTinyCatalog([{ alias: "qwen3-4b", seed: 3 }]);
const otherSeed = makeTinyCatalog([{ alias: "qwen3-4b", seed: 4 }]);
const pinnedPath = `${pinned.modelsDir}/${pinned.catalog.models[0]!.file}`;
const substitutePath = `${otherSeed.modelsDir}/${otherSeed.catalog.models[0]!.file}`;
const provider = (catalog: typeof pinned) => new Engine({ store: new ModelStore({ catalog: catalog.catalog, modelsDir: catalog.modelsDir }), gpu: false, threads: 1, contextSize: 4096 });

/** A session's plaintext as the gateway seals it: the bytes a receipt's request_sha256 covers. */
const plaintext = Buffer.from(
  canonicalJson({
    model: "qwen3-4b",
    messages: [{ role: "user", content: "Tell me about the lighthouse keeper." }],
    max_tokens: 40,
    temperature: 0.9,
    seed: 21,
    top_logprobs: 3,
    client_nonce: null,
    nonce: randomBytes(16).toString("hex"),
  }),
);

/** The answer a provider running `catalog`'s weights gives to that plaintext, as the agent's engine makes it. */
async function answer(catalog: typeof pinned) {
  const engine = provider(catalog);
  try {
    const { answer, done } = await collect(engine.generate(planTurn(parseSessionPlaintext(JSON.parse(plaintext.toString("utf8"))))));
    return { entries: answer.logprobs, done };
  } finally {
    await engine.dispose();
  }
}

let honest: { entries: TokenLogprob[]; done: { prompt_tokens: number; completion_tokens: number } };
let substitute: { entries: TokenLogprob[] };
beforeAll(async () => {
  honest = await answer(pinned);
  substitute = await answer(otherSeed);
});
afterAll(() => {
  pinned.cleanup();
  otherSeed.cleanup();
});

const job = (id: string, tokens: number[], overrides: Partial<RescoreJob> = {}): RescoreJob => ({
  id,
  alias: "qwen3-4b",
  request_b64: plaintext.toString("base64"),
  tokens,
  settings: { threads: 2, batch_size: 16 },
  ...overrides,
});

/** Runs the rescorer over these stdin lines to the end of its input; its results by line, and its exit. */
async function rescorer(lines: string[], args: string[] = []) {
  const proc = startProcess(AGENT_BIN, ["rescore", "--catalog", pinned.catalogPath, "--model", `qwen3-4b=${pinnedPath}`, "--threads", "2", ...args], { input: true });
  const closed = new Promise<number | null>((resolve) => proc.child.once("close", resolve));
  // one line at a time, as an auditor writes them; the process reads on after each result
  for (const line of lines) proc.child.stdin!.write(`${line}\n`);
  proc.child.stdin!.end();
  const code = await closed;
  const results = proc.stdout().trimEnd().split("\n").filter(Boolean).map((line) => RescoreResultSchema.parse(JSON.parse(line)));
  return { code, results, stderr: proc.stderr() };
}

const scored = (result: RescoreResult | undefined) => {
  if (result?.ok !== true) throw new Error(`not scored: ${JSON.stringify(result)}`);
  return result;
};

describe("svc-agent rescore: one job a line in, one result a line out", () => {
  it("an honest provider's answer re-scores within the tolerance with the receipt's prompt count; another seed's fails; bad jobs are answered with why", async () => {
    const ids = honest.entries.map((e) => e.id);
    const { code, results, stderr } = await rescorer([
      JSON.stringify(job("honest", ids)),
      "not json",
      JSON.stringify({ ...job("no-settings", ids), settings: undefined }),
      JSON.stringify(job("outside", [...ids.slice(0, 3), 10_000_000])),
      JSON.stringify(job("threads", ids, { settings: { threads: 3, batch_size: 16 } })),
      JSON.stringify(job("garbled", ids, { request_b64: "bm90IGpzb24=" })),
      JSON.stringify(job("substitute", substitute.entries.map((e) => e.id))),
    ]);
    expect(code, stderr).toBe(0);
    expect(results.map((r) => [r.id, r.ok])).toEqual([
      ["honest", true],
      ["", false],
      ["no-settings", false],
      ["outside", false],
      ["threads", false],
      ["garbled", false],
      ["substitute", true],
    ]);
    const fair = scored(results[0]);
    expect(fair.prompt_tokens).toBe(honest.done.prompt_tokens);
    expect(fair.positions).toHaveLength(honest.done.completion_tokens);
    expect(honest.entries.length).toBeGreaterThan(10);
    const statistic = auditStatistic(honest.entries, fair.positions);
    expect(statistic.mean).toBeLessThan(AUDIT_FAIL_MEAN);
    expect(auditVerdict(statistic)).toBe("pass");
    expect(auditVerdict(auditStatistic(substitute.entries, scored(results[6]).positions))).toBe("fail");
    const errors = results.map((r) => (r.ok ? "" : r.error));
    expect(errors[1]).toBe("a job line that is not JSON");
    expect(errors[2]).toMatch(/^not a rescore job: settings: /);
    expect(errors[3]).toMatch(/^answer token 3 is id 10000000, outside the model.s vocabulary of \d+$/);
    expect(errors[4]).toBe("settings.threads is 3; this rescorer runs at most 2 (--threads)");
    expect(errors[5]).toBe("request_b64: not JSON");
  });

  it("a job line past the bound is refused by its length, and the next job is still scored", async () => {
    const { code, results } = await rescorer([`{"id":"${"x".repeat(9 * 1024 * 1024)}"}`, JSON.stringify(job("after", honest.entries.slice(0, 4).map((e) => e.id)))]);
    expect(code).toBe(0);
    expect(results[0]).toEqual({ id: "", ok: false, error: expect.stringMatching(/^a job line of \d+ bytes, over the \d+ a rescorer reads$/) });
    expect(scored(results[1]).positions).toHaveLength(4);
  });
});

describe("svc-agent rescore: the models are the pinned ones, checked at start", () => {
  it("a file that is not the alias's pin is a usage error naming --model, before any job is read", async () => {
    const result = await runCli("svc-agent", ["rescore", "--catalog", pinned.catalogPath, "--model", `qwen3-4b=${substitutePath}`]);
    expect(result.code).toBe(64);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(/^svc-agent: --model: qwen3-4b: .* has sha256 [0-9a-f]{64} but the catalog pins [0-9a-f]{64}; refusing to load it/);
  });

  it("no --model, or an alias the catalog lacks, is a usage error naming --model", async () => {
    const none = await runCli("svc-agent", ["rescore", "--catalog", pinned.catalogPath]);
    expect([none.code, none.stderr.trim()]).toEqual([64, "svc-agent: --model: give at least one ALIAS=PATH; see --help"]);
    const unknown = await runCli("svc-agent", ["rescore", "--catalog", pinned.catalogPath, "--model", `qwen3-4b=${pinnedPath},nope=${pinnedPath}`]);
    expect(unknown.code).toBe(64);
    expect(unknown.stderr.trim()).toBe(`svc-agent: --model nope=${pinnedPath}: nope is not a catalog alias; see --help`);
  });
});
