// Issue 41 item 7, what the gateway holds for its sessions: streams that ask for the longest answer of providers that
// send without end (`--test-fault endless`), read by nobody (a raw socket that sends its request and never reads).
// Each session ends at a bound (held-bytes.ts): cancelled at the provider and never charged to it, its request
// logged with a code of its own, a stream's connection closed; the gateway's memory stays within the bounds, and an
// honest caller is served meanwhile.
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_ANSWER_TOKENS } from "../../src/session/answer-bounds.ts";
import { DEFAULT_HELD_LIMITS, MIB } from "../../gateway/directory/held-bytes.ts";
import { post, startAgent, startGateway, waitForProvider, type AgentProcess, type GatewayProcess } from "../fixtures/gateway.ts";

const synthetic = ["--engine", "synthetic", "--synthetic-tokens", "20", "--synthetic-token-ms", "5"];
/** 8 KiB deltas, one every 2 ms or so (paced, so that 8 of them do not flood a loaded machine): frames of some 11 KiB. */
const ENDLESS = [...synthetic, "--test-fault", "endless=8192,token-delay-ms=2"];
/** The most one frame adds past a bound before the cut (a whole answer's frames carry up to 64 Ki characters). */
const FRAME_SLACK = 256 * 1024;

/**
 * A stream asked for on a raw socket that is never read; `rest()` reads what the socket still holds, to the end the
 * gateway gave it (a socket never read hears no end: the gateway's last bytes wait behind the ones before).
 */
function neverReads(gw: GatewayProcess, provider: string): { rest: () => Promise<string>; destroy: () => void } {
  const { hostname, port } = new URL(gw.url);
  const body = JSON.stringify({ messages: [{ role: "user", content: "hi" }], max_tokens: MAX_ANSWER_TOKENS, stream: true, provider });
  const socket = connect(Number(port), hostname);
  socket.pause();
  socket.write(
    `POST /v1/chat/completions HTTP/1.1\r\nhost: ${hostname}\r\nauthorization: Bearer ${gw.key}\r\ncontent-type: application/json\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  const rest = () =>
    new Promise<string>((resolve) => {
      const chunks: Buffer[] = [];
      socket.on("data", (chunk: Buffer) => chunks.push(chunk));
      socket.once("close", () => resolve(Buffer.concat(chunks).toString()));
      socket.on("error", () => undefined);
      socket.resume();
    });
  return { rest, destroy: () => socket.destroy() };
}

const cutsLogged = (gw: GatewayProcess) => gw.logs().filter((l) => l.bound !== undefined && l.unread_bytes !== undefined);
const faultsLogged = (gw: GatewayProcess, providers: readonly AgentProcess[]) => gw.logs().filter((l) => l.fault !== undefined && providers.some((p) => p.providerId === l.provider));

async function endlessAgents(gw: GatewayProcess, count: number): Promise<AgentProcess[]> {
  const agents = await Promise.all(Array.from({ length: count }, () => startAgent(gw.coordinatorUrl, gw.tiny, { args: ENDLESS })));
  for (const agent of agents) await gw.waitForLog((l) => l.msg === "agent advertising" && l.provider === agent.providerId, 30_000);
  return agents;
}

describe("Issue 41: a bound per session on what the gateway holds for a caller who does not read", () => {
  let gw: GatewayProcess;
  let endless: AgentProcess[] = [];
  beforeAll(async () => {
    gw = await startGateway({ agentArgs: synthetic });
    endless = await endlessAgents(gw, 8);
  }, 180_000);
  afterAll(async () => {
    await Promise.all(endless.map((a) => a.stop()));
    await gw?.stop();
  });

  it("8 callers who never read, of 8 endless providers: each is let go at its session's bound, uncharged to the provider, and the gateway's RSS grows < 120 MB", async () => {
    const before = gw.usage().rssMb;
    const callers = endless.map((agent) => neverReads(gw, agent.providerId));
    try {
      const honest = await post(gw, "/v1/chat/completions", { messages: [{ role: "user", content: "hi" }], max_tokens: 20, provider: gw.providerId });
      expect(honest.status).toBe(200);
      await expect.poll(() => cutsLogged(gw).length, { timeout: 120_000, interval: 200 }).toBe(8);
      for (const cut of cutsLogged(gw)) {
        expect([cut.bound, cut.code]).toEqual(["unread", "caller_too_slow"]);
        expect(cut.unread_bytes).toBeGreaterThan(DEFAULT_HELD_LIMITS.unreadPerSession);
        expect(cut.unread_bytes).toBeLessThan(DEFAULT_HELD_LIMITS.unreadPerSession + FRAME_SLACK);
      }
      expect(new Set(cutsLogged(gw).map((l) => l.provider))).toEqual(new Set(endless.map((a) => a.providerId)));
      // the gateway closed each connection, as if the caller had hung up (no [DONE], no error line), and its request's line says why
      for (const text of await Promise.all(callers.map((c) => c.rest()))) {
        expect(text).toMatch(/^HTTP\/1\.1 200 /);
        expect(text).not.toContain("[DONE]");
        expect(text).not.toContain('"error"');
      }
      const requests = gw.logs().filter((l) => l.msg === "request" && l.route === "/v1/chat/completions" && l.provider !== gw.providerId);
      expect(requests.map((l) => [l.status, l.code])).toEqual(Array.from({ length: 8 }, () => [200, "caller_too_slow"]));
      // cancelled at the provider, which is free again, and never charged for it
      for (const agent of endless) await waitForProvider(gw, agent.providerId, (r) => r?.busy === false && r.waiting === 0);
      expect(faultsLogged(gw, endless)).toEqual([]);
      // each held at most 4 MiB unread, beside the answer its connection took before it filled (some 4 MB on Linux),
      // kept for the receipt check: 64 MB in all. Before the bound each held up to its wire bound, 46 MB
      const growth = gw.usage().peakMb - before;
      console.log(`8 callers who never read: the gateway's RSS peaked ${growth.toFixed(1)} MB above where it was`);
      expect(growth).toBeLessThan(120);
    } finally {
      for (const caller of callers) caller.destroy();
    }
  }, 180_000);
});

describe("Issue 41: a bound in total, past which the session holding the most is ended", () => {
  let gw: GatewayProcess;
  let endless: AgentProcess[] = [];
  const totalMb = 3;
  beforeAll(async () => {
    // no honest provider: every request here is pinned to an endless one
    gw = await startGateway({ agents: 0, args: ["--max-held-mb", String(totalMb)] });
    endless = await endlessAgents(gw, 2);
  }, 120_000);
  afterAll(async () => {
    await Promise.all(endless.map((a) => a.stop()));
    await gw?.stop();
  });

  it("a whole answer past --max-held-mb is 503 overloaded, and the provider is not charged", async () => {
    const res = await post(gw, "/v1/chat/completions", { messages: [{ role: "user", content: "hi" }], max_tokens: MAX_ANSWER_TOKENS, provider: endless[0]!.providerId });
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
    const { error } = (await res.json()) as { error: Record<string, unknown> };
    expect([error.code, error.svc_action]).toEqual(["overloaded", "wait"]);
    const [cut] = cutsLogged(gw);
    expect([cut?.bound, cut?.code]).toEqual(["total", "overloaded"]);
    expect((cut?.unread_bytes as number) + (cut?.kept_bytes as number)).toBeGreaterThan(totalMb * MIB);
    await waitForProvider(gw, endless[0]!.providerId, (r) => r?.busy === false && r.waiting === 0);
    expect(faultsLogged(gw, endless)).toEqual([]);
  }, 120_000);

  it("with --max-held-mb below a session's unread bound, every stream that does not read ends at the total, its connection closed", async () => {
    const before = cutsLogged(gw).length;
    const callers = endless.map((agent) => neverReads(gw, agent.providerId));
    try {
      await expect.poll(() => cutsLogged(gw).length - before, { timeout: 120_000, interval: 200 }).toBe(2);
      for (const cut of cutsLogged(gw).slice(before)) {
        expect([cut.bound, cut.code]).toEqual(["total", "overloaded"]);
        expect((cut.unread_bytes as number) + (cut.kept_bytes as number)).toBeLessThan(totalMb * MIB + FRAME_SLACK);
      }
      for (const text of await Promise.all(callers.map((c) => c.rest()))) expect(text).not.toContain("[DONE]");
      for (const agent of endless) await waitForProvider(gw, agent.providerId, (r) => r?.busy === false && r.waiting === 0);
      expect(faultsLogged(gw, endless)).toEqual([]);
    } finally {
      for (const caller of callers) caller.destroy();
    }
  }, 180_000);
});
