// Issue 43 item 4, AUDIT-DESIGN §5 "Replicas", with real processes on a real nats-server and a real PostgreSQL:
// replica A audits (`--audit-models`), gateway B beside it only reads (`--audit`). A failure A finds is a row of the
// shared `audits` table that bars the provider on B within its poll (sooner on A's NATS hint); B lists the same record
// and serves the same evidence, signed with the one audit key every replica shares. A forged hint bars no one. An
// operator's `svc-gateway audit clear ID --database` lifts the bar on both.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { runCli } from "../../harness/cli.ts";
import { startNatsCluster, type NatsCluster } from "../../harness/nats.ts";
import { startPostgres, type Postgres } from "../../harness/postgres.ts";
import { AUDIT_SUBJECT } from "../../src/wire/nats.ts";
import { listProviders, post, waitForProvider, type AgentProcess } from "../fixtures/gateway.ts";
import { Replicas, type Replica } from "../fixtures/replicas.ts";
import { makeTinyCatalog, type TinyCatalog } from "../fixtures/tiny-catalog.ts";

let nats: NatsCluster;
let postgres: Postgres;
let database: string;
let tiny: TinyCatalog;
let replicas: Replicas;
let a: Replica;
let b: Replica;
let agent: AgentProcess;
let tap: NatsConnection;

beforeAll(async () => {
  [nats, postgres] = await Promise.all([startNatsCluster(1), startPostgres()]);
  database = await postgres.freshDatabase();
  tiny = makeTinyCatalog([{ alias: "qwen3-4b", seed: 1 }]);
  const corpus = join(tiny.dir, "corpus.jsonl");
  writeFileSync(corpus, JSON.stringify({ id: "chat", kind: "chat", route: "chat", body: { messages: [{ role: "user", content: "Tell me about tides." }], max_tokens: 8 } }));
  replicas = new Replicas(tiny, nats.urls, database);
  a = await replicas.gateway({ args: ["--audit-models", `qwen3-4b=${tiny.files["qwen3-4b"]!.path}`, "--audit-corpus", corpus, "--audit-rate", "1", "--audit-delay", "10ms"] });
  b = await replicas.gateway({ alone: true, args: ["--audit"] });
  // its receipts verify, but every logprob is 0.1 nats below the model's: the first audit fails
  agent = await replicas.agent(a.coordinatorUrl!, { args: ["--test-fault", "logprob-shift=100"] });
  await Promise.all([waitForProvider(a, agent.providerId), waitForProvider(b, agent.providerId)]);
  tap = await connect({ servers: nats.nodes[0]!.url });
}, 180_000);
afterAll(async () => {
  await tap?.close();
  await replicas?.stop();
  await Promise.all([nats?.stop(), postgres?.stop()]);
  tiny?.cleanup();
});

const chat = (gateway: Replica) => post(gateway, "/v1/chat/completions", { model: "qwen3-4b", messages: [{ role: "user", content: "hello" }], max_tokens: 4 }, { signal: AbortSignal.timeout(60_000) });
type Listed = { audits: { passed: number; failed: number; suspect: number; barring: number; last: { id: string; verdict: string } | null }; in_rotation: boolean };
const listed = async (gateway: Replica) => (await listProviders(gateway)).find((p) => p.id === agent.providerId) as unknown as Listed;

describe("§5 Replicas: the bars and records are the store's", () => {
  it("a forged audit hint on NATS bars no one: B reads the store, which holds no failure", async () => {
    tap.publish(AUDIT_SUBJECT, JSON.stringify({ a: `aud_${"f".repeat(24)}`, p: agent.providerId, bars: [`provider:${agent.providerId}`] }));
    await tap.flush();
    // a hint makes B read the store within a fraction of a second; it stays in rotation through more than a poll
    for (const until = Date.now() + 3_000; Date.now() < until; await new Promise((resolve) => setTimeout(resolve, 250))) {
      expect((await listed(b)).in_rotation).toBe(true);
    }
    expect((await chat(b)).status).toBe(200);
    expect((await listed(b)).audits).toEqual({ passed: 0, failed: 0, suspect: 0, barring: 0, last: null });
  });

  let auditId = "";
  it("a fail audited by replica A bars the provider on B within its poll; B lists the record and serves the same evidence, under the one audit key", { timeout: 360_000 }, async () => {
    expect((await chat(a)).status).toBe(200);
    const line = await a.waitForLog((l) => typeof l.msg === "string" && l.msg.startsWith("audit aud_"), 300_000);
    expect(line.verdict).toBe("fail");
    auditId = line.audit as string;
    await vi.waitFor(async () => expect(await listed(b)).toEqual(expect.objectContaining({ in_rotation: false, audits: { passed: 0, failed: 1, suspect: 0, barring: 1, last: expect.objectContaining({ id: auditId, verdict: "fail" }) } })), { timeout: 10_000, interval: 100 });
    const refused = await chat(b);
    expect([refused.status, ((await refused.json()) as { error: { code: string } }).error.code]).toEqual([503, "provider_unavailable"]);
    const evidence = async (g: Replica) => (await fetch(`${g.url}/v1/audits/${auditId}`)).text();
    const key = async (g: Replica) => ((await (await fetch(`${g.url}/v1/audits/key`)).json()) as { key: string }).key;
    const fromB = await evidence(b);
    expect(fromB).toBe(await evidence(a));
    const keyA = await key(a);
    expect([await key(b), (JSON.parse(fromB) as { auditor: { key: string } }).auditor.key]).toEqual([keyA, keyA]);
    const printed = await runCli("svc-gateway", ["audit-key", "--data-dir", b.dataDir, "--database", database]);
    expect(printed.stdout.trim()).toBe(keyA);
  });

  it("svc-gateway audit clear ID lifts the bar on every replica; a bad or unknown id is one line naming it", async () => {
    const bad = await runCli("svc-gateway", ["audit", "clear", "aud_nope", "--database", database]);
    expect([bad.code, bad.stderr.trim()]).toEqual([1, "svc-gateway: audit clear aud_nope: not an audit id (aud_ and 24 hex digits)"]);
    const unknown = await runCli("svc-gateway", ["audit", "clear", `aud_${"0".repeat(24)}`, "--database", database]);
    expect([unknown.code, unknown.stderr.trim()]).toEqual([1, `svc-gateway: audit clear aud_${"0".repeat(24)}: no failed audit has that id on this store`]);
    const cleared = await runCli("svc-gateway", ["audit", "clear", auditId, "--database", database, "--json"]);
    expect(cleared.code, cleared.stderr).toBe(0);
    expect(JSON.parse(cleared.stdout)).toEqual({ id: auditId, provider: agent.providerId, cleared_at: expect.any(String) });
    await vi.waitFor(async () => expect([(await listed(a)).in_rotation, (await listed(b)).in_rotation]).toEqual([true, true]), { timeout: 10_000, interval: 100 });
    // the record and the evidence stay
    expect((await listed(b)).audits.failed).toBe(1);
    expect((await fetch(`${b.url}/v1/audits/${auditId}`)).status).toBe(200);
    expect((await chat(b)).status).toBe(200);
  });
});
