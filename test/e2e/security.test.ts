// docs/security.md, tried as an attacker would on loopback: who may join the coordinator as a
// provider or as a gateway, where the embedded coordinator listens, and that no message or burst can wedge a
// queue. Each test reproduces an attack and shows it fail.
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { GATEWAY_PATH } from "../../src/wire/gateway.ts";
import { wsUrl } from "../../src/link/ws-url.ts";
import { runCli } from "../../harness/cli.ts";
import { startCluster, type Cluster } from "../fixtures/cluster.ts";
import { tokenFor } from "../fixtures/enroll.ts";
import { get, post, startAgent, startGateway, waitForProvider, type GatewayProcess } from "../fixtures/gateway.ts";
import { GATEWAY_BIN, startProcess } from "../../harness/process.ts";
import { waitForReady } from "../../harness/ready.ts";

const SLOW = ["--engine", "synthetic", "--synthetic-tokens", "20", "--synthetic-token-ms", "100"];

let cluster: Cluster;
let gateway: Awaited<ReturnType<Cluster["startGateway"]>>;
/** `serve --host 0.0.0.0`: its embedded coordinator stays on loopback, and takes no gateway link without the secret. */
let loopback: GatewayProcess;
/** `serve --host 0.0.0.0 --coordinator-host 0.0.0.0 --open-enrollment`: a coordinator opened to any machine. */
let open: GatewayProcess;
beforeAll(async () => {
  // three independent services, started side by side: the cluster, and two gateways with embedded coordinators
  [loopback, open] = await Promise.all([
    startGateway({ agents: 0, args: ["--host", "0.0.0.0"] }),
    startGateway({ agents: 0, args: ["--host", "0.0.0.0", "--coordinator-host", "0.0.0.0", "--open-enrollment"] }),
    (async () => {
      cluster = await startCluster();
      gateway = await cluster.startGateway();
    })(),
  ]);
}, 60_000);
afterAll(() => Promise.all([cluster?.stop(), loopback?.stop(), open?.stop()]));

/** The gateway link's secret: the cluster's coordinator made it in the data dir its gateways share. */
const gatewayAuth = () => ({ authorization: `Bearer ${readFileSync(join(cluster.tiny.dir, "gateway", "gateway-secret"), "utf8").trim()}` });

/** A raw WebSocket to the coordinator, as any process on the machine could open one. */
function rawLink(path: string, headers: Record<string, string> = {}): Promise<{ ws?: WebSocket; status?: number; body?: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(wsUrl(cluster.coordinator.url, path), { headers });
    ws.once("open", () => resolve({ ws }));
    ws.once("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (d: Buffer) => (body += d.toString()));
      res.on("end", () => resolve({ status: res.statusCode, body }));
    });
    ws.once("error", reject);
  });
}

describe("Security: provider admission", () => {
  it("an agent with no enrollment token and no hardware evidence is refused with a close code and one line saying why", async () => {
    const agent = await startAgent(cluster.coordinator.url, cluster.tiny, { token: "", until: /disconnected: refused/ });
    expect(agent.stdout()).toMatch(/disconnected: refused: this coordinator admits a provider with an enrollment token .* \(close code 4403\); reconnecting/);
    expect(agent.stdout()).not.toMatch(/granted rung/);
    await cluster.coordinator.waitForLog((l) => l.msg === "agent refused" && String(l.reason).includes("enrollment token"));
    await agent.stop();
  });

  it("an unknown or revoked token is refused (close code 4401); a live one joins", async () => {
    // the unknown token's agent starts while the other token is made and revoked
    const starting = startAgent(cluster.coordinator.url, cluster.tiny, { token: "svc-prov_not-a-token", until: /disconnected: refused/ });
    const dataDir = join(cluster.tiny.dir, "gateway");
    const enrolled = JSON.parse((await runCli("svc-gateway", ["providers", "enroll", "--name", "mac-1", "--json", "--data-dir", dataDir])).stdout) as { id: string; token: string };
    expect(enrolled.token).toMatch(/^svc-prov_/);
    expect((await runCli("svc-gateway", ["providers", "revoke", enrolled.id, "--data-dir", dataDir])).stdout).toContain(`revoked ${enrolled.id}`);
    const [bogus, revoked] = await Promise.all([starting, startAgent(cluster.coordinator.url, cluster.tiny, { token: enrolled.token, until: /disconnected: refused/ })]);
    expect(bogus.stdout()).toMatch(/refused: the enrollment token is unknown, revoked or expired.*\(close code 4401\)/);
    expect(revoked.stdout()).toMatch(/close code 4401/);
    await Promise.all([bogus.stop(), revoked.stop()]);
  });

  it("the token from --token-file (its first line) joins without a word; typed as --token it joins and warns that ps shows it", async () => {
    const { token } = JSON.parse((await runCli("svc-gateway", ["providers", "enroll", "--json", "--data-dir", join(cluster.tiny.dir, "gateway")])).stdout) as { token: string };
    const file = join(cluster.tiny.dir, "token.txt");
    writeFileSync(file, `${token}\n`, { mode: 0o600 });
    // two machines side by side, so a token each (one enrollment admits one machine at a time)
    const typedToken = (await tokenFor(cluster.coordinator.url))!;
    const [byFile, typed, missing] = await Promise.all([
      startAgent(cluster.coordinator.url, cluster.tiny, { token: "", args: ["--token-file", file] }),
      startAgent(cluster.coordinator.url, cluster.tiny, { token: "", args: ["--token", typedToken] }),
      runCli("svc-agent", ["start", "--coordinator", cluster.coordinator.url, "--token-file", join(cluster.tiny.dir, "no-such-file")]),
    ]);
    expect(byFile.stderr()).toBe("");
    expect(typed.stderr()).toBe(
      "svc-agent: warning: --token on the command line can be read by other local users (ps); pass --token-file FILE or set SVC_PROVIDER_TOKEN instead\n",
    );
    await Promise.all([byFile.stop(), typed.stop()]);
    expect([missing.code, missing.stderr]).toEqual([1, `svc-agent: --token-file ${join(cluster.tiny.dir, "no-such-file")}: cannot read it (ENOENT)\n`]);
  });

  it("a hardware-rung agent joins without a token", async () => {
    const agent = await cluster.startAgent("hardware", { token: "" });
    expect(agent.stdout()).toMatch(/granted rung hardware/);
    await agent.stop();
  });

  it("a revoked token ends a connected agent's stay within 5 s: disconnected (4401) and gone from the listing", async () => {
    const dataDir = join(cluster.tiny.dir, "gateway");
    const { id, token } = JSON.parse((await runCli("svc-gateway", ["providers", "enroll", "--json", "--data-dir", dataDir])).stdout) as { id: string; token: string };
    // the default re-challenge (5 minutes) is far off: only the enrollment watch can end this stay
    const agent = await startAgent(cluster.coordinator.url, cluster.tiny, { token });
    await waitForProvider(gateway, agent.providerId);
    const listed = JSON.parse((await runCli("svc-gateway", ["providers", "list", "--json", "--data-dir", dataDir])).stdout) as { id: string; lastUsedAt: number | null }[];
    expect(listed.find((t) => t.id === id)?.lastUsedAt).toEqual(expect.any(Number));
    expect((await runCli("svc-gateway", ["providers", "revoke", id, "--data-dir", dataDir])).code).toBe(0);
    const revokedAt = Date.now();
    await waitForProvider(gateway, agent.providerId, (r) => r === undefined, 5_000);
    await agent.waitFor(/disconnected: refused: the enrollment token is unknown, revoked or expired.*\(close code 4401\)/, 5_000 - (Date.now() - revokedAt));
    await cluster.coordinator.waitForLog((l) => l.msg === "agent's enrollment revoked" && l.enrollment === id);
    await agent.stop();
  });

  it("issue 41: one enrollment admits one machine at a time: a second key on a connected token is refused (4409), and joins once the first has gone", async () => {
    const dataDir = join(cluster.tiny.dir, "gateway");
    const { id, token } = JSON.parse((await runCli("svc-gateway", ["providers", "enroll", "--json", "--data-dir", dataDir])).stdout) as { id: string; token: string };
    const first = await startAgent(cluster.coordinator.url, cluster.tiny, { token });
    // another machine (keys of its own) with a copy of the token
    const second = await startAgent(cluster.coordinator.url, cluster.tiny, { token, until: /disconnected: refused/ });
    expect(second.stdout()).toMatch(
      new RegExp(`refused: enrollment ${id} is in use by provider ${first.providerId}, and one enrollment admits one machine at a time; enroll this machine with a token of its own \\(svc-gateway providers enroll\\) \\(close code 4409\\)`),
    );
    expect(second.stdout()).not.toMatch(/granted rung/);
    await waitForProvider(gateway, first.providerId);
    expect((await (await get(gateway, "/v1/providers")).json() as { id: string }[]).map((p) => p.id)).not.toContain(second.providerId);
    // the first leaves: the second, retrying, gets in
    await first.stop();
    await second.waitFor(/granted rung process/, 30_000);
    await waitForProvider(gateway, second.providerId);
    await second.stop();
  }, 60_000);

  it("--open-enrollment admits any machine, and the gateway warns when its floor is below hardware", async () => {
    await open.waitFor(/open enrollment: any machine .* WARNING: with trust floor process such a machine reads prompts/);
    const agent = await startAgent(open.coordinatorUrl, open.tiny, { token: "" });
    expect(agent.stdout()).toMatch(/granted rung process/);
    await agent.stop();
  });

  it("the providers commands: a bad --expires or an unknown id is one line naming it, exit 1", async () => {
    const dataDir = join(cluster.tiny.dir, "cli-store");
    const bad = await runCli("svc-gateway", ["providers", "enroll", "--expires", "soon", "--data-dir", dataDir]);
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^svc-gateway: --expires soon: give a duration/)]);
    const made = await runCli("svc-gateway", ["providers", "enroll", "--name", "studio", "--expires", "30d", "--data-dir", dataDir]);
    const unknown = await runCli("svc-gateway", ["providers", "revoke", "ptk_nope", "--data-dir", dataDir]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim()).toBe("svc-gateway: providers revoke ptk_nope: no live enrollment token has that id (see providers list)");
    const secret = made.stdout.trim();
    expect(secret).toMatch(/^svc-prov_[A-Za-z0-9_-]{43}$/);
    const table = (await runCli("svc-gateway", ["providers", "list", "--data-dir", dataDir])).stdout;
    expect(table).toMatch(/studio\s+svc-prov_\S+…\s+live/);
    expect(table).not.toContain(secret);
  });
});

describe("Security: gateway links", () => {
  it("the embedded coordinator refuses a gateway link without this gateway's secret", async () => {
    for (const headers of [{}, { authorization: "Bearer guessed-secret" }]) {
      const res = await new Promise<number>((resolve, reject) => {
        const ws = new WebSocket(wsUrl(loopback.coordinatorUrl, GATEWAY_PATH), { headers });
        ws.once("unexpected-response", (_req, r) => resolve(r.statusCode ?? 0));
        ws.once("open", () => reject(new Error("the coordinator took an unauthenticated gateway")));
        ws.once("error", reject);
      });
      expect(res).toBe(401);
    }
    // its own gateway still serves
    expect((await get(loopback, "/healthz")).status).toBe(200);
  });

  it("the gateway link is authenticated on loopback too: given no secret, the coordinator makes one in its data dir (0600)", async () => {
    const dir = join(cluster.tiny.dir, "lone-coordinator");
    const coordinator = startProcess(GATEWAY_BIN, ["coordinator", "--port", "0", "--catalog", cluster.tiny.catalogPath, "--data-dir", dir]);
    try {
      const url = (await waitForReady(coordinator, "svc-gateway coordinator")).coordinator;
      const secretFile = join(dir, "gateway-secret");
      expect(statSync(secretFile).mode & 0o777).toBe(0o600);
      expect(coordinator.stdout()).toContain(`svc-gateway: gateways link with the secret in ${secretFile}`);
      // a local process on loopback, without the secret, is refused
      const res = await new Promise<number>((resolve, reject) => {
        const ws = new WebSocket(wsUrl(url, GATEWAY_PATH));
        ws.once("unexpected-response", (_req, r) => resolve(r.statusCode ?? 0));
        ws.once("open", () => reject(new Error("the coordinator took an unauthenticated gateway on loopback")));
        ws.once("error", reject);
      });
      expect(res).toBe(401);
      const serve = (dataDir: string, extra: string[], env: NodeJS.ProcessEnv = {}) =>
        startProcess(GATEWAY_BIN, ["serve", "--port", "0", "--coordinator", url, "--catalog", cluster.tiny.catalogPath, "--data-dir", dataDir, ...extra], { env });
      // four gateways, started side by side: a gateway with its own data dir and no secret; a wrong secret; the
      // file; the shared data dir
      const lost = serve(join(cluster.tiny.dir, "lost-gateway"), []);
      const wrong = serve(join(cluster.tiny.dir, "wrong-gateway"), [], { SVC_GATEWAY_SECRET: "not-the-secret" });
      const byFile = serve(join(cluster.tiny.dir, "file-gateway"), ["--gateway-secret-file", secretFile]);
      const sharing = serve(dir, []);
      try {
        // the one with no secret says what to pass, in one line, and does not start
        await lost.exited;
        expect(lost.child.exitCode).toBe(1);
        expect(lost.stderr()).toBe(
          `svc-gateway: --coordinator ${url}: no gateway secret; pass --gateway-secret-file FILE (the coordinator's DATA_DIR/gateway-secret) or SVC_GATEWAY_SECRET\n`,
        );
        // the others start (the harness's bound for a start on a loaded machine); then a wrong secret is refused by
        // the coordinator, and the file, or the shared data dir, links
        await Promise.all([wrong, byFile, sharing].map((p) => waitForReady(p, "svc-gateway serve")));
        await wrong.waitForLog((l) => l.msg === "the coordinator refused this gateway's link" && String(l.why).includes("the gateway secret is missing or wrong"));
        await byFile.waitForLog((l) => l.msg === "connected to the coordinator");
        await sharing.waitForLog((l) => l.msg === "connected to the coordinator");
        expect(byFile.stderr()).toBe("");
      } finally {
        await Promise.all([lost.stop(), wrong.stop(), byFile.stop(), sharing.stop()]);
      }
    } finally {
      await coordinator.stop();
    }
  });

  it("a secret given as a flag works and warns, in one line, that ps shows it; from a file or the environment it does not", async () => {
    const secret = "s3cret-s3cret-s3cret";
    const dir = join(cluster.tiny.dir, "flag-coordinator");
    const coordinator = startProcess(GATEWAY_BIN, ["coordinator", "--port", "0", "--catalog", cluster.tiny.catalogPath, "--data-dir", dir, "--gateway-secret", secret]);
    try {
      const url = (await waitForReady(coordinator, "svc-gateway coordinator")).coordinator;
      expect(coordinator.stderr()).toBe(
        "svc-gateway: warning: --gateway-secret on the command line can be read by other local users (ps); pass --gateway-secret-file FILE or set SVC_GATEWAY_SECRET instead\n",
      );
      expect(existsSync(join(dir, "gateway-secret"))).toBe(false);
      const secretFile = join(cluster.tiny.dir, "flag-secret.txt");
      writeFileSync(secretFile, `${secret}\n`, { mode: 0o600 });
      const gateway = startProcess(GATEWAY_BIN, ["serve", "--port", "0", "--coordinator", url, "--catalog", cluster.tiny.catalogPath, "--data-dir", join(cluster.tiny.dir, "flag-gateway"), "--gateway-secret-file", secretFile]);
      // both flags at once, run while that gateway starts
      const running = runCli("svc-gateway", ["serve", "--gateway-secret", secret, "--gateway-secret-file", secretFile]);
      try {
        await waitForReady(gateway, "svc-gateway serve");
        await gateway.waitForLog((l) => l.msg === "connected to the coordinator");
        expect(gateway.stderr()).toBe("");
        expect(gateway.stdout()).not.toContain(secret);
      } finally {
        await gateway.stop();
      }
      const both = await running;
      expect(both.code).toBe(64);
      expect(both.stderr).toBe("svc-gateway: option '--gateway-secret-file <file>' cannot be used with option '--gateway-secret <secret>'; see --help\n");
    } finally {
      await coordinator.stop();
    }
  });

  it("the embedded coordinator listens on loopback even when --host opens the gateway; --coordinator-host opens it", async () => {
    expect(loopback.url).toMatch(/^http:\/\/0\.0\.0\.0:/);
    expect(loopback.coordinatorUrl).toMatch(/^http:\/\/127\.0\.0\.1:/);
    expect(open.coordinatorUrl).toMatch(/^http:\/\/0\.0\.0\.0:/);
  });
});

describe("Security: placements cannot wedge or flood a queue", () => {
  it("a placement on a provider the directory does not hold is answered stale, after a delta saying it is gone", async () => {
    const { ws } = await rawLink(GATEWAY_PATH, gatewayAuth());
    const messages: { t: string; gone?: string[] }[] = [];
    const stale = new Promise<void>((resolve) =>
      ws!.on("message", (d) => {
        messages.push(JSON.parse(String(d)) as (typeof messages)[number]);
        if (messages.at(-1)!.t === "stale") resolve();
      }),
    );
    const ghost = "e".repeat(64);
    ws!.send(JSON.stringify({ t: "place", id: "s_ghost0001", provider: ghost, alias: "qwen3-4b", floor: "process", exclude: [], enc: "AAAA", ct: "AAAA" }));
    await stale;
    expect(messages.slice(-2)).toEqual([{ t: "directory", put: [], gone: [ghost], placed: ["s_ghost0001"] }, { t: "stale", id: "s_ghost0001" }]);
    ws!.close();
  });

  it("a gateway message of the wrong shape closes that gateway's link with 1008, and the coordinator goes on", async () => {
    const { ws } = await rawLink(GATEWAY_PATH, gatewayAuth());
    const closed = new Promise<{ code: number; reason: string }>((resolve) => ws!.once("close", (code, reason) => resolve({ code, reason: String(reason) })));
    ws!.send(JSON.stringify({ t: "place", id: "not a session id!", provider: "e".repeat(64), alias: "qwen3-4b", floor: "process", exclude: [], enc: "AAAA", ct: "AAAA" }));
    expect(await closed).toEqual({ code: 1008, reason: "invalid message" });
    // a fresh link is served as ever (its directory may arrive with the handshake, so ask for something after)
    const { ws: next } = await rawLink(GATEWAY_PATH, gatewayAuth());
    const answer = new Promise<unknown>((resolve) =>
      next!.on("message", (d) => {
        const message = JSON.parse(String(d)) as { t: string };
        if (message.t === "attestation") resolve(message);
      }),
    );
    next!.send(JSON.stringify({ t: "attestation", rid: 1, id: "e".repeat(64) }));
    expect(await answer).toEqual({ t: "attestation", rid: 1, evidence: null });
    next!.close();
  });

  it("20,000 placements of garbage from one socket: the queue cap refuses the excess, the provider drains the rest, and a caller is served", async () => {
    const agent = await cluster.startAgent("process");
    try {
      await waitForProvider(gateway, agent.providerId);
      const { ws } = await rawLink(GATEWAY_PATH, gatewayAuth());
      let refused = 0;
      let settled = 0;
      let mostWaiting = 0;
      const all = new Promise<void>((resolve) =>
        ws!.on("message", (d) => {
          const message = JSON.parse(String(d)) as { t: string; error?: { code: string }; put?: { id: string; waiting: number }[] };
          for (const entry of message.put ?? []) if (entry.id === agent.providerId) mostWaiting = Math.max(mostWaiting, entry.waiting);
          if (message.t === "rejected" && message.error?.code === "overloaded") refused++;
          if (message.t === "rejected" || message.t === "end") if (++settled === 20_000) resolve();
        }),
      );
      for (let i = 0; i < 20_000; i++) {
        const id = `s_flood${String(i).padStart(6, "0")}`;
        ws!.send(JSON.stringify({ t: "place", id, provider: agent.providerId, alias: "qwen3-4b", floor: "process", pin: agent.providerId, exclude: [], enc: "AAAA", ct: "AAAA" }));
      }
      await all;
      // the provider's queue never held more than its cap (32), as the directory told this link throughout
      expect(mostWaiting).toBe(32);
      expect(refused).toBeGreaterThan(19_000);
      ws!.close();
      await waitForProvider(gateway, agent.providerId, (r) => r?.busy === false && r.waiting === 0);
      const res = await post(gateway, "/v1/chat/completions", { messages: [{ role: "user", content: "hi" }], max_tokens: 2, provider: agent.providerId });
      expect(res.status).toBe(200);
      const metrics = await (await fetch(`${cluster.coordinator.url}/metrics`)).text();
      expect(Number(/^svc_coordinator_overloaded_total (\d+)/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(refused);
    } finally {
      await agent.stop();
    }
  }, 60_000);
});

describe("Security: admission control", () => {
  it("a full queue answers 503 overloaded, svc_action wait, with Retry-After; a request that waits too long gets the same", async () => {
    const gw = await startGateway({ agentArgs: SLOW, args: ["--max-queue-per-provider", "1", "--max-queued-ms", "1000"] });
    try {
      const chat = () => post(gw, "/v1/chat/completions", { messages: [{ role: "user", content: "hi" }], max_tokens: 20 });
      const running = chat();
      await waitForProvider(gw, gw.providerId, (r) => r?.busy === true);
      const waiting = chat();
      await waitForProvider(gw, gw.providerId, (r) => r?.waiting === 1);
      const over = await chat();
      expect(over.status).toBe(503);
      expect(Number(over.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(((await over.json()) as { error: unknown }).error).toMatchObject({ code: "overloaded", svc_action: "wait" });
      // the one queued behind a 2 s session passes its 1 s limit
      const late = await waiting;
      expect(late.status).toBe(503);
      expect(Number(late.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(((await late.json()) as { error: { message: string } }).error.message).toMatch(/waited 1 s in the queue/);
      expect((await running).status).toBe(200);
    } finally {
      await gw.stop();
    }
  }, 60_000);
});
