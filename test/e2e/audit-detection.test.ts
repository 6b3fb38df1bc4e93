// Issue 43 item 3: the substitutes an audit must catch, each an agent whose receipts verify, so that only the re-score
// of the auditor (the package's own `svc-agent rescore` on the pinned GGUF) can tell: other weights of the same shape
// (another seed), the same weights through a Q4_0 round trip, the model with one layer removed, the right model with
// made-up logprobs, and a provider that runs the Q4_0 round trip on half of its sessions. One gateway audits every
// ordinary placement (--audit-rate 1); requests pinned to one provider drive its audits one at a time.
//
// How many audits each takes is bench/results/audit-measure.json's (bench/README.md "Audit statistic"): every
// substitute's per-audit detection p was 1 (its smallest mean |Δ| ≥ 9.8e-3 against AUDIT_FAIL_MEAN 5e-3, the largest
// honest 9.6e-4), so one audit. A provider cheating on a fraction f of its sessions is caught within
// N(q) = ⌈ln(1 − q) / ln(1 − f·p)⌉ audits with probability q.
import { join } from "node:path";
import { writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeTinyModel } from "../../tiny-model/gguf.ts";
import { listProviders, post, startAgent, startGateway, type GatewayProcess } from "../fixtures/gateway.ts";
import { makeTinyCatalog } from "../fixtures/tiny-catalog.ts";

/** Audits to catch, with probability q, a provider cheating on a fraction f of sessions with per-audit detection p. */
const auditsFor = (q: number, f: number, p = 1) => (f * p >= 1 ? 1 : Math.ceil(Math.log(1 - q) / Math.log(1 - f * p)));

// the measurement's model: the tiny qwen3 of seed 3 with 4 layers, F32
const PINNED = { seed: 3, layers: 4 };
const FAULTS = {
  honest: undefined,
  "another seed": (dir: string) => `substitute=${writeTinyModel(join(dir, "seed4.gguf"), { ...PINNED, seed: 4 }).path}`,
  "Q4_0 round trip": (dir: string) => `substitute=${writeTinyModel(join(dir, "q4.gguf"), { ...PINNED, roundTrip: "q4_0" }).path}`,
  "layer 2 of 4 removed": (dir: string) => `substitute=${writeTinyModel(join(dir, "drop2.gguf"), { ...PINNED, dropLayer: 2 }).path}`,
  // each logprob signed 0.1 nats below the engine's: about a Q4 model's typical error, made up
  "made-up logprobs": () => "logprob-shift=100",
  "Q4_0 on half of the sessions": (dir: string) => `substitute=${join(dir, "q4.gguf")},cheat=0.5`,
} as const;
type Fault = keyof typeof FAULTS;

let gw: GatewayProcess;
const providerOf = new Map<Fault, string>();
beforeAll(async () => {
  const tiny = makeTinyCatalog([{ alias: "qwen3-4b", ...PINNED }]);
  const corpus = join(tiny.dir, "corpus.jsonl");
  // a sampled chat and a greedy legacy completion (where every honest token must be the reference's most likely)
  const items = [
    { id: "tides", kind: "chat", route: "chat", body: { messages: [{ role: "user", content: "Tell me about tides." }], max_tokens: 16 } },
    { id: "story", kind: "chat", route: "completions", body: { prompt: "Once upon a time", max_tokens: 16, temperature: 0 } },
  ];
  writeFileSync(corpus, items.map((item) => JSON.stringify(item)).join("\n"));
  gw = await startGateway({ tiny, args: ["--audit-models", `qwen3-4b=${tiny.files["qwen3-4b"]!.path}`, "--audit-corpus", corpus, "--audit-rate", "1", "--audit-delay", "10ms"] });
  providerOf.set("honest", gw.providerId);
  const faulty = Object.entries(FAULTS).filter(([, spec]) => spec !== undefined) as [Fault, (dir: string) => string][];
  const specs = faulty.map(([fault, spec]) => [fault, spec(tiny.dir)] as const);
  const agents = await Promise.all(specs.map(([, spec]) => startAgent(gw.coordinatorUrl, tiny, { args: ["--test-fault", spec] })));
  gw.agents.push(...agents); // stopped with the gateway
  agents.forEach((agent, i) => providerOf.set(specs[i]![0], agent.providerId));
  for (const agent of agents) await gw.waitForLog((l) => l.msg === "agent advertising" && l.provider === agent.providerId);
}, 120_000);
afterAll(async () => {
  await gw?.stop();
  gw?.tiny.cleanup();
});

interface Audited {
  audits: { passed: number; failed: number; last: { verdict: string } | null };
  in_rotation: boolean;
}
const recordOf = async (provider: string) => (await listProviders(gw)).find((p) => p.id === provider) as unknown as Audited;

/**
 * Sends ordinary requests pinned to the fault's provider, one at a time, each followed by the audit it draws, until
 * an audit fails or `most` audits have passed; returns the provider's record then.
 */
async function audit(fault: Fault, most: number): Promise<Audited> {
  const provider = providerOf.get(fault)!;
  for (let i = 1; i <= most; i++) {
    const res = await post(gw, "/v1/chat/completions", { model: "qwen3-4b", provider, messages: [{ role: "user", content: `hello ${i}` }], max_tokens: 4 });
    // the caller's answer is served: its receipt verifies, whatever the provider ran
    expect(res.status).toBe(200);
    await expect.poll(async () => { const { passed, failed } = (await recordOf(provider)).audits; return passed + failed; }, { timeout: 120_000, interval: 200 }).toBe(i);
    if ((await recordOf(provider)).audits.failed > 0) break;
  }
  return recordOf(provider);
}

describe("§3 Honest provider", () => {
  it("passes every audit and stays in rotation", { timeout: 300_000 }, async () => {
    const record = await audit("honest", 3);
    expect([record.audits.passed, record.audits.failed, record.in_rotation]).toEqual([3, 0, true]);
  });
});

describe("§3 Substitutes: each is barred by its first audit (the measured per-audit detection is 1)", () => {
  it.each(["another seed", "Q4_0 round trip", "layer 2 of 4 removed", "made-up logprobs"] as const)("%s", { timeout: 300_000 }, async (fault) => {
    expect(auditsFor(0.95, 1)).toBe(1);
    const record = await audit(fault, auditsFor(0.95, 1));
    expect([record.audits.passed, record.audits.failed, record.audits.last?.verdict, record.in_rotation]).toEqual([0, 1, "fail", false]);
    // out of rotation: pinned, it is refused
    const res = await post(gw, "/v1/chat/completions", { model: "qwen3-4b", provider: providerOf.get(fault), messages: [{ role: "user", content: "hi" }], max_tokens: 4 });
    expect(res.status).toBe(503);
  });
});

describe("§3 A provider that cheats on half of its sessions", () => {
  it("is barred within N = ⌈ln(1 − q) / ln(1 − f·p)⌉ audits: 5 at q = 95 % (the figure docs/security.md states); the test allows 20, q = 1 − 10⁻⁶", { timeout: 600_000 }, async () => {
    expect(auditsFor(0.95, 0.5)).toBe(5);
    const most = auditsFor(1 - 1e-6, 0.5);
    expect(most).toBe(20);
    const record = await audit("Q4_0 on half of the sessions", most);
    expect([record.audits.failed, record.audits.last?.verdict, record.in_rotation]).toEqual([1, "fail", false]);
    expect(record.audits.passed).toBeLessThan(most);
  });
});
