// DESIGN §7 replicas on NATS, with real processes on a real three-node nats-server cluster and a real PostgreSQL:
// gateways alone, replicas (gateway + coordinator) and a coordinator alone serve each other's providers; what NATS
// carries is the WebSocket's ciphertext only; the newer of two connections wins, whatever the coordinators' clocks say;
// and the faults: a coordinator, a gateway, a NATS node and then NATS itself killed.
import { randomBytes } from "node:crypto";
import { cpSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { connect, type MsgHdrs, type NatsConnection } from "@nats-io/transport-node";
import OpenAI from "openai";
import { createSealedFetch } from "../../client/index.ts";
import { DIRECTORY_KEY_FILE, directoryKey } from "../../gateway/coordinator/directory-key.ts";
import { runCli } from "../../harness/cli.ts";
import { Signer } from "../../src/crypto/signing.ts";
import { H_ASK } from "../../src/wire/nats.ts";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { GATEWAY_BIN, startProcess, type Proc } from "../../harness/process.ts";
import { followSse } from "../../harness/sse.ts";
import { freePort } from "../../harness/ports.ts";
import { listProviders, post, waitForProvider, type AgentProcess } from "../fixtures/gateway.ts";
import { startNatsCluster, type NatsCluster } from "../../harness/nats.ts";
import { startPostgres, type Postgres } from "../../harness/postgres.ts";
import { Replicas, type Replica } from "../fixtures/replicas.ts";
import { makeTinyCatalog, type TinyCatalog } from "../fixtures/tiny-catalog.ts";
import { startRogueCoordinator } from "../fixtures/rogue-coordinator.ts";

const CANARY = `canary-${randomBytes(12).toString("hex")}`;
/** Slow tokens, so a stream is still running when its coordinator dies. */
const SLOW = ["--test-fault", "token-delay-ms=100"];
/** Preloaded into a coordinator whose wall clock is an hour behind. */
const CLOCK_BEHIND = fileURLToPath(new URL("../fixtures/clock-behind.mjs", import.meta.url));
let nats: NatsCluster;
let postgres: Postgres;
let database: string;
let tiny: TinyCatalog;
let replicas: Replicas;
let tap: NatsConnection;
/** Every message NATS carried while the tests ran: its subject, and its body as text. */
const carried: { subject: string; body: string }[] = [];
/** Replicas A and B (gateway + coordinator), coordinators alone C and D, a gateway alone G. */
let a: Replica;
let b: Replica;
let c: Proc & { coordinatorUrl: string; dataDir: string };
let d: Proc & { coordinatorUrl: string; dataDir: string };
let g: Replica;
/** P on A; X1 and X2 on C, falling back to D. */
let p: AgentProcess;
let x1: AgentProcess;
let x2: AgentProcess;

const chat = (gateway: Replica, body: Record<string, unknown> = {}) =>
  post(gateway, "/v1/chat/completions", { messages: [{ role: "user", content: "Hi" }], max_tokens: 4, ...body }, { signal: AbortSignal.timeout(30_000) });

beforeAll(async () => {
  [nats, postgres] = await Promise.all([startNatsCluster(), startPostgres()]);
  database = await postgres.freshDatabase();
  tiny = makeTinyCatalog([{ alias: "qwen3-4b", seed: 1 }]);
  replicas = new Replicas(tiny, nats.urls, database);
  tap = await connect({ servers: nats.nodes[2]!.url });
  tap.subscribe(">", { callback: (_err, msg) => void carried.push({ subject: msg.subject, body: Buffer.from(msg.data).toString("latin1") }) });
  await tap.flush();
  [a, b, c, d, g] = await Promise.all([replicas.gateway(), replicas.gateway(), replicas.coordinator(), replicas.coordinator(), replicas.gateway({ alone: true })]);
  [p, x1, x2] = await Promise.all([
    replicas.agent(a.coordinatorUrl!, { args: SLOW }),
    replicas.agent(`${c.coordinatorUrl},${d.coordinatorUrl}`, { args: SLOW }),
    replicas.agent(`${c.coordinatorUrl},${d.coordinatorUrl}`, { args: SLOW }),
  ]);
  await Promise.all([a, b, g].flatMap((gateway) => [p, x1, x2].map((agent) => waitForProvider(gateway, agent.providerId))));
  // each agent loads its model on its first session: done here, so the tests time sessions, not loads
  const warmed = await Promise.all([p, x1, x2].map((agent) => chat(g, { provider: agent.providerId, max_tokens: 1 })));
  expect(warmed.map((res) => res.status)).toEqual([200, 200, 200]);
}, 180_000);

afterAll(async () => {
  await tap?.close();
  await replicas?.stop();
  await Promise.all([nats?.stop(), postgres?.stop()]);
  tiny?.cleanup();
});

describe("DESIGN §7 Replicas on NATS: sealed end to end", () => {
  it("a gateway alone serves a provider of another replica's coordinator, and no NATS message holds the canary prompt", async () => {
    const res = await post(g, "/v1/chat/completions", {
      messages: [{ role: "system", content: `Repeat ${CANARY}.` }, { role: "user", content: CANARY }],
      max_tokens: 16,
      provider: p.providerId,
    });
    expect(res.status).toBe(200);
    const answer = ((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content;
    // the session's `end` follows its last frame on the gateway's subject
    await expect.poll(() => carried.some((m) => m.subject.startsWith("svc.g.") && m.body.includes('"t":"end"')), { timeout: 10_000 }).toBe(true);
    const subjects = new Set(carried.map((m) => m.subject.split(".").slice(0, 2).join(".")));
    for (const s of ["svc.p", "svc.dir", "svc.g", "svc.c", "svc.hello", "svc.claim"]) expect(subjects).toContain(s);
    const bodies = carried.map((m) => m.body).join("\n");
    for (const kind of ['"t":"directory"', '"t":"place"', '"t":"frame"', '"t":"end"']) expect(bodies).toContain(kind);
    expect(bodies).not.toContain(CANARY);
    if (answer.length >= 4) expect(bodies).not.toContain(JSON.stringify(answer).slice(1, -1));
  });

  it("a gateway-blind request through a gateway alone: sealed by the caller to its candidates, placed on another replica's coordinator over NATS, answered and checked", async () => {
    const canary = `canary-${randomBytes(12).toString("hex")}`;
    const baseURL = `${g.url}/v1`;
    const catalog = JSON.parse(readFileSync(tiny.catalogPath, "utf8")) as unknown;
    const client = new OpenAI({ baseURL, apiKey: g.key, maxRetries: 0, fetch: createSealedFetch({ baseURL, apiKey: g.key, catalog }) });
    const before = carried.length;
    const { data, response } = await client.chat.completions.create({ model: "qwen3-4b", messages: [{ role: "user", content: `Repeat ${canary}` }], max_tokens: 4 }).withResponse();
    expect(data.choices[0]!.finish_reason).toBeDefined();
    expect([p, x1, x2].map((agent) => agent.providerId)).toContain(response.headers.get("x-svc-provider"));
    await expect.poll(() => carried.slice(before).some((m) => m.subject.startsWith("svc.g.") && m.body.includes('"t":"end"')), { timeout: 10_000 }).toBe(true);
    const bodies = carried.slice(before).map((m) => m.body).join("\n");
    expect(bodies).toContain('"blind":{');
    expect(bodies).not.toContain(canary);
  });
});

describe("DESIGN §7 Replicas on NATS: one directory, SPEC routing across replicas", () => {
  it("concurrent requests at one gateway take the idle providers first, whichever coordinator holds them", async () => {
    const answers = await Promise.all([0, 1, 2].map(() => chat(g)));
    for (const res of answers) expect(res.status).toBe(200);
    expect(new Set(answers.map((res) => res.headers.get("x-svc-provider")))).toEqual(new Set([p.providerId, x1.providerId, x2.providerId]));
  }, 60_000);

  it("a pin reaches its provider through any gateway, and one provider serves one session at a time", async () => {
    for (const gateway of [a, b, g]) {
      const res = await chat(gateway, { provider: x1.providerId });
      expect(res.status).toBe(200);
      expect(res.headers.get("x-svc-provider")).toBe(x1.providerId);
    }
    // two pinned at once from two gateways: the second waits in the owning coordinator's queue
    const listed = followSse(chat(a, { provider: x1.providerId, stream: true, max_tokens: 30 }));
    await listed.firstContent;
    await waitForProvider(b, x1.providerId, (r) => r?.busy === true);
    const queued = chat(b, { provider: x1.providerId });
    await waitForProvider(g, x1.providerId, (r) => r?.busy === true && r.waiting === 1);
    expect((await queued).status).toBe(200);
    expect((await listed.done).data.at(-1)).toBe("[DONE]");
  }, 60_000);

  it("a conversation keeps its provider and its prompt cache through any gateway: with every provider idle, each next turn, sent through another replica, goes back to the first turn's provider and reuses its prefix", async () => {
    const idle = (r: { busy: boolean; waiting: number } | undefined) => r?.busy === false && r.waiting === 0;
    // each gateway has a data dir (and gateway secret) of its own: the scope's secret is the database's, and the
    // placement reaches the other gateways over NATS
    const through = [g, a, b];
    let turns = 0;
    const turn = async (messages: { role: string; content: string }[]) => {
      const gateway = through[turns++ % through.length]!;
      await Promise.all([p, x1, x2].map((agent) => waitForProvider(gateway, agent.providerId, idle)));
      const res = await chat(gateway, { messages, prompt_cache_key: "over-nats", temperature: 0 });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { choices: { message: { content: string } }[]; usage: { prompt_tokens_details: { cached_tokens: number } } };
      return { provider: res.headers.get("x-svc-provider"), text: body.choices[0]!.message.content, cached: body.usage.prompt_tokens_details.cached_tokens };
    };
    let conversation = [{ role: "system", content: "You are a coding agent. Tools: read_file(path), run(cmd). ".repeat(4) }, { role: "user", content: "Read config.toml." }];
    const first = await turn(conversation);
    expect(first.cached).toBe(0);
    let last = first;
    // least-recently-used alone would send each of these turns to another of the three idle providers
    for (const user of ["Change the port.", "Now run the tests."]) {
      conversation = [...conversation, { role: "assistant", content: last.text }, { role: "user", content: user }];
      last = await turn(conversation);
      expect(last.provider).toBe(first.provider);
      expect(last.cached).toBeGreaterThan(0);
    }
    // what the gateways told each other: a hash and the provider, never the key, the prompt_cache_key or a scope
    const told = carried.filter((m) => m.subject === "svc.affinity").map((m) => JSON.parse(m.body) as { k: string; p: string });
    expect(told.length).toBeGreaterThanOrEqual(3);
    for (const message of told) expect(Object.keys(message).sort()).toEqual(["k", "p"]);
    expect(told.at(-1)).toEqual({ k: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), p: first.provider });
  }, 60_000);

  describe("one provider at two coordinators", () => {
    /** Each case's provider on C, and the coordinator whose wall clock is an hour behind: started side by side. */
    let first: AgentProcess;
    let second: AgentProcess;
    let behind: Proc & { coordinatorUrl: string };
    beforeAll(async () => {
      [first, second, behind] = await Promise.all([replicas.agent(c.coordinatorUrl), replicas.agent(c.coordinatorUrl), replicas.coordinator({ nodeArgs: ["--import", CLOCK_BEHIND] })]);
      await Promise.all([first, second].map((z) => waitForProvider(g, z.providerId)));
    }, 120_000);
    afterAll(async () => {
      await Promise.all([first?.stop(), second?.stop(), behind?.stop()]);
    });

    it("two coordinators holding one provider: the newer connection wins, the older is closed", async () => {
      const z = first;
      // the same keys in another data dir (one agent holds a data dir's lock)
      const twinDir = `${z.dataDir}-twin`;
      cpSync(z.dataDir, twinDir, { recursive: true, filter: (path) => !path.endsWith("agent.lock") });
      const twin = await replicas.agent(b.coordinatorUrl!, { dataDir: twinDir });
      expect(twin.providerId).toBe(z.providerId);
      await c.waitForLog((l) => l.msg === "provider claimed by a newer connection at another coordinator; closing ours" && l.provider === z.providerId);
      await Promise.all([z.stop(), twin.stop()]);
    }, 60_000);

    it("the newer connection wins though its coordinator's clock is an hour behind: the epoch is the database's, no clock's", async () => {
      const z = second;
      const twinDir = `${z.dataDir}-twin`;
      cpSync(z.dataDir, twinDir, { recursive: true, filter: (path) => !path.endsWith("agent.lock") });
      // connected after z: by a wall-clock epoch its claim would be an hour older than z's, and lose
      const twin = await replicas.agent(behind.coordinatorUrl, { dataDir: twinDir });
      // (with a wall-clock epoch, `behind` would close the twin each time instead, and c never this)
      await c.waitForLog((l) => l.msg === "provider claimed by a newer connection at another coordinator; closing ours" && l.provider === z.providerId);
      await Promise.all([z.stop(), twin.stop()]);
    }, 60_000);
  });
});

describe("DESIGN §11 Replicas on NATS: no provider on a message's word", () => {
  const DROPPED = "a message on NATS that no trusted coordinator signed was dropped";

  it("a stranger on NATS posing as a coordinator, unsigned or under a key of its own, with a made-up hardware provider: no gateway lists it or seals a prompt to it", async () => {
    const rogues = await Promise.all([startRogueCoordinator(nats.nodes[1]!.url, "qwen3-4b"), startRogueCoordinator(nats.nodes[2]!.url, "qwen3-4b", { key: Signer.fromSeed(randomBytes(32)) })]);
    try {
      // each has heard every gateway ping, and has been telling each of them its directory for a while
      await vi.waitFor(() => expect(Math.min(...rogues.map((r) => r.told.size))).toBeGreaterThanOrEqual(3), { timeout: 10_000, interval: 100 });
      for (const gateway of [a, b, g]) await gateway.waitForLog((l) => l.msg === DROPPED);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      for (const gateway of [a, b, g]) {
        for (const rogue of rogues) {
          expect((await listProviders(gateway)).map((r) => r.id)).not.toContain(rogue.providerId);
          const pinned = await chat(gateway, { provider: rogue.providerId, messages: [{ role: "user", content: CANARY }] });
          expect(pinned.status).toBe(503);
          expect(((await pinned.json()) as { error: { code: string } }).error.code).toBe("provider_unavailable");
        }
        for (let i = 0; i < 3; i++) expect((await chat(gateway, { messages: [{ role: "user", content: CANARY }] })).status).toBe(200);
      }
      expect(rogues.map((r) => [r.placements, r.opened])).toEqual([[0, []], [0, []]]);
    } finally {
      await Promise.all(rogues.map((r) => r.close()));
    }
  }, 90_000);

  it("a coordinator's signed snapshot replayed after its provider left: the gateway drops it, and the provider stays out", async () => {
    const z = await replicas.agent(c.coordinatorUrl);
    await waitForProvider(g, z.providerId);
    // a stranger records what NATS carries, headers and all, while a new gateway is sent every coordinator's snapshot
    const recorder = await connect({ servers: nats.nodes[0]!.url });
    const recorded: { subject: string; headers: MsgHdrs; data: Uint8Array }[] = [];
    recorder.subscribe("svc.g.*", { callback: (_err, msg) => void recorded.push({ subject: msg.subject, headers: msg.headers!, data: msg.data }) });
    await recorder.flush();
    const fresh = await replicas.gateway({ alone: true });
    try {
      await waitForProvider(fresh, z.providerId);
      // the snapshots that named Z, the new gateway's among them
      const snapshots = recorded.filter((m) => m.headers.get(H_ASK) === "snap" && Buffer.from(m.data).toString().includes(z.providerId));
      expect(snapshots.length).toBeGreaterThan(0);
      await z.stop();
      await vi.waitFor(async () => expect((await listProviders(fresh)).map((r) => r.id)).not.toContain(z.providerId), { timeout: 15_000, interval: 100 });
      for (const m of snapshots) recorder.publish(m.subject, m.data, { headers: m.headers });
      await fresh.waitForLog((l) => l.msg === DROPPED && String(l.why).startsWith("a replay"));
      for (let i = 0; i < 5; i++) {
        for (const gateway of [fresh, g]) expect((await listProviders(gateway)).map((r) => r.id)).not.toContain(z.providerId);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      await recorder.close();
      await fresh.stop();
    }
  }, 90_000);

  it("a coordinator key that signs a lie (stolen from a replica's data dir): the made-up hardware provider is listed at what its evidence proves, process with no serial, and a hardware-floor gateway lists nothing of it", async () => {
    const [strict, rogue] = await Promise.all([
      replicas.gateway({ alone: true, args: ["--trust-floor", "hardware"] }),
      startRogueCoordinator(nats.nodes[1]!.url, "qwen3-4b", { key: directoryKey(a.dataDir) }),
    ]);
    try {
      await waitForProvider(g, rogue.providerId);
      expect((await listProviders(g)).find((r) => r.id === rogue.providerId)).toEqual({ id: rogue.providerId, model_ids: ["qwen3-4b"], trust: "process", busy: false, waiting: 0, evidence_sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
      // each gateway, the strict one too, took the signed lie and checked the evidence behind it
      for (const gateway of [g, strict]) await gateway.waitForLog((l) => l.provider === rogue.providerId && l.coordinator_says === "hardware" && l.proven === "process");
      expect((await listProviders(strict)).map((r) => r.id)).toEqual([]);
      const pinned = await chat(strict, { provider: rogue.providerId, messages: [{ role: "user", content: CANARY }] });
      expect(pinned.status).toBe(503);
      expect(rogue.opened).toEqual([]);
    } finally {
      await Promise.all([rogue.close(), strict.stop()]);
    }
    // gone with its feed, before the tests after this one route unpinned requests
    await vi.waitFor(async () => {
      for (const gateway of [a, b, g]) expect((await listProviders(gateway)).map((r) => r.id)).not.toContain(rogue.providerId);
    }, { timeout: 15_000, interval: 250 });
  }, 90_000);
});

describe("DESIGN §7 Replicas on NATS: faults", () => {
  it("kill -9 a coordinator: its stream gets the SPEC mid-stream error within 3 s, a request before its first token moves to another provider, its agent is listed again through another coordinator within 5 s", async () => {
    // the test's tap on `>` would answer every request, so NATS could never say "no responders" for a dead coordinator
    await tap.close();
    // X1's coordinator is C, or D when it moved on a drop before: that one dies, and X1 moves to the other
    const onD = x1.stdout().lastIndexOf(`connected to ${d.coordinatorUrl}`) > x1.stdout().lastIndexOf(`connected to ${c.coordinatorUrl}`);
    const [victim, other] = onD ? [d, c] : [c, d];
    // W, slow to its first token, on the same coordinator: the one idle provider once the others stream
    const w = await replicas.agent(`${victim.coordinatorUrl},${other.coordinatorUrl}`, { args: ["--test-fault", "first-token-delay-ms=4000"] });
    await waitForProvider(g, w.providerId);
    const stream = followSse(chat(g, { provider: x1.providerId, stream: true, max_tokens: 200 }));
    const hold = new AbortController();
    const busy = [p, x2].map((agent) => followSse(post(g, "/v1/chat/completions", { messages: [{ role: "user", content: "Hi" }], provider: agent.providerId, stream: true, max_tokens: 200 }, { signal: hold.signal })));
    await Promise.all([stream.firstContent, ...busy.map((b) => b.firstContent)]);
    const moved = chat(g);
    await w.waitFor(/session \S+ start/);
    const reconnects = x1.stdout().split(`connected to ${other.coordinatorUrl}`).length;
    const killed = performance.now();
    await victim.kill("SIGKILL");
    const done = await stream.done;
    expect(performance.now() - killed).toBeLessThan(3_000);
    expect(done.data).not.toContain("[DONE]");
    expect((JSON.parse(done.data.at(-1)!) as { error: { code: string } }).error.code).toBe("provider_error");
    await vi.waitFor(async () => {
      expect(x1.stdout().split(`connected to ${other.coordinatorUrl}`).length).toBeGreaterThan(reconnects);
      expect((await listProviders(g)).map((r) => r.id)).toContain(x1.providerId);
    }, { timeout: Math.max(0, 5_000 - (performance.now() - killed)), interval: 100 });
    // the request W never started answers from another provider (the providers held busy are let go for it)
    hold.abort();
    await Promise.allSettled(busy.map((b) => b.done));
    const answer = await moved;
    expect(answer.status).toBe(200);
    expect(answer.headers.get("x-svc-provider")).not.toBe(w.providerId);
    await w.stop();
  }, 90_000);

  it("kill -9 a gateway replica: the others keep serving", async () => {
    await b.kill("SIGKILL");
    for (const gateway of [a, g, a, g]) expect((await chat(gateway)).status).toBe(200);
  }, 60_000);

  it("kill one node of the three-node NATS cluster: requests after it still succeed", async () => {
    await nats.nodes[0]!.proc.kill("SIGKILL");
    for (const gateway of [a, g, a, g, a, g]) {
      const res = await chat(gateway);
      expect(res.status, await res.text()).toBe(200);
    }
  }, 60_000);

  it("NATS gone at run time: 502 directory_unavailable with svc_action wait, never a hang; back, everything recovers by itself", async () => {
    await Promise.all(nats.nodes.slice(1).map((n) => n.proc.kill("SIGKILL")));
    await vi.waitFor(async () => {
      const res = await chat(g);
      expect(res.status).toBe(502);
      expect(((await res.json()) as { error: Record<string, unknown> }).error).toMatchObject({ code: "directory_unavailable", svc_action: "wait" });
    }, { timeout: 20_000, interval: 250 });
    for (const i of [0, 1, 2]) nats.restart(i);
    await vi.waitFor(async () => {
      for (const gateway of [a, g]) expect((await chat(gateway)).status).toBe(200);
    }, { timeout: 30_000, interval: 500 });
  }, 90_000);
});

// each start-up case is a process of its own that exits at once: they run side by side (the context's expect, as vitest
// asks of concurrent tests)
describe.concurrent("DESIGN §7 Replicas on NATS: start-up", () => {
  it("a coordinator on NATS without --database is one line naming the flags, exit code 64", async ({ expect }) => {
    const proc = startProcess(GATEWAY_BIN, ["coordinator", "--port", "0", "--catalog", tiny.catalogPath, "--data-dir", `${tiny.dir}/no-database`, "--nats", nats.urls]);
    await proc.exited;
    expect(proc.child.exitCode).toBe(64);
    expect(proc.stderr()).toBe(
      "svc-gateway: --nats: a coordinator on NATS needs --database postgres://… (the shared database orders which coordinator holds a provider); a gateway alone takes --no-coordinator\n",
    );
  });

  it("svc-gateway directory-key prints the key a coordinator on NATS signs with, as its banner says it, kept 0600 in its data dir", async ({ expect }) => {
    const printed = await runCli("svc-gateway", ["directory-key", "--data-dir", c.dataDir]);
    expect(printed).toMatchObject({ code: 0, stdout: `${directoryKey(c.dataDir).publicKey}\n` });
    expect(c.stdout()).toContain(`signs what it publishes with directory key ${directoryKey(c.dataDir).publicKey}`);
    expect(statSync(join(c.dataDir, DIRECTORY_KEY_FILE)).mode & 0o777).toBe(0o600);
  });

  it("a gateway alone on NATS without --coordinator-keys, or the flag without --nats, is one line naming it, exit code 64", async ({ expect }) => {
    const cases: [string[], string][] = [
      [["--no-coordinator", "--nats", nats.urls], "svc-gateway: --coordinator-keys: a gateway alone on NATS takes no coordinator's message unsigned; pass --coordinator-keys FILE, the coordinators' directory keys (svc-gateway directory-key --data-dir DIR prints one)\n"],
      [["--coordinator-keys", replicas.keysPath], "svc-gateway: --coordinator-keys: only a gateway on NATS (--nats) takes coordinators' directory keys\n"],
    ];
    // side by side, each with a data dir of its own
    const procs = cases.map(([args], i) => startProcess(GATEWAY_BIN, ["serve", "--port", "0", "--coordinator-port", "0", "--catalog", tiny.catalogPath, "--data-dir", `${tiny.dir}/no-keys-${i}`, ...args]));
    await Promise.all(procs.map((proc) => proc.exited));
    expect(procs.map((proc) => [proc.child.exitCode, proc.stderr()])).toEqual(cases.map(([, line]) => [64, line]));
  });

  it("an unreachable --nats is one line naming the flag, exit code 2", async ({ expect }) => {
    const proc = startProcess(GATEWAY_BIN, ["serve", "--port", "0", "--no-coordinator", "--catalog", tiny.catalogPath, "--data-dir", `${tiny.dir}/unreachable`, "--coordinator-keys", replicas.keysPath, "--nats", `nats://127.0.0.1:${await freePort()}`]);
    await proc.exited;
    expect(proc.child.exitCode).toBe(2);
    expect(proc.stderr()).toMatch(/^svc-gateway: --nats: cannot reach nats:\/\/127\.0\.0\.1:\d+ \([^\n]*\)\n$/);
  }, 60_000);
});
