// docs/operator-guide.md "The coordinator port": an attacker holds 2,000 idle sockets on the coordinator port
// (half raw TCP that never speaks, half WebSocket upgrades to /v1/agent that never answer the challenge), opening
// each again a moment after it is closed. Connections not yet proven are capped per address and must prove
// themselves within the handshake deadline, so the coordinator's file descriptors stay bounded, an enrolled agent
// keeps serving, and the log gets one line per interval instead of lines per connection.
import { readdirSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { AGENT_PATH } from "../../src/wire/agent.ts";
import { wsUrl } from "../../src/link/ws-url.ts";
import { DEFAULT_GATE_LIMITS } from "../../gateway/coordinator/connection-gate.ts";
import { CONNECTION_LOG_INTERVAL_MS } from "../../gateway/coordinator/connection-log.ts";
import { post, startGateway, type GatewayProcess } from "../fixtures/gateway.ts";

const SOCKETS = 2_000;
/** How long the attacker waits before opening a closed socket again: a steady flood, not a busy loop. */
const REOPEN_MS = 2_000;

let gw: GatewayProcess;
beforeAll(async () => {
  gw = await startGateway({ agentArgs: ["--engine", "synthetic", "--synthetic-tokens", "4"] });
}, 60_000);
afterAll(() => gw?.stop());

/** The gateway process's open file descriptors: it embeds the coordinator. */
const fds = () => readdirSync(`/proc/${gw.child.pid}/fd`).length;

/** Holds `SOCKETS` idle connections to the coordinator port, reopening each one the coordinator closes. */
function flood(): { stop(): void; opened: () => number } {
  const { hostname, port } = new URL(gw.coordinatorUrl);
  let stopped = false;
  let opened = 0;
  const live = new Set<Socket | WebSocket>();
  const open = (i: number) => {
    if (stopped) return;
    opened += 1;
    const again = () => {
      live.delete(conn);
      if (!stopped) setTimeout(() => open(i), REOPEN_MS);
    };
    const conn: Socket | WebSocket =
      i % 2 === 0 ? connect(Number(port), hostname) : new WebSocket(wsUrl(gw.coordinatorUrl, AGENT_PATH), { handshakeTimeout: 30_000 });
    live.add(conn);
    conn.on("error", () => undefined); // refused or reset: the close that follows opens it again
    conn.once("close", again);
  };
  for (let i = 0; i < SOCKETS; i++) open(i);
  return {
    opened: () => opened,
    stop() {
      stopped = true;
      for (const conn of live) (conn instanceof WebSocket ? conn.terminate() : conn.destroy());
    },
  };
}

describe("Links and secrets: the coordinator port under a flood of idle connections", () => {
  it("2,000 idle sockets held open: fds stay bounded, the enrolled agent keeps serving, the log stays short", async () => {
    const baseline = fds();
    const linesBefore = gw.logs().length;
    const attack = flood();
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, fds())), 200);
    const statuses: number[] = [];
    try {
      // over a whole log interval plus a handshake deadline, so the summary line and the timeouts both come
      const until = Date.now() + CONNECTION_LOG_INTERVAL_MS + DEFAULT_GATE_LIMITS.handshakeMs;
      while (Date.now() < until) {
        const res = await post(gw, "/v1/chat/completions", { model: "qwen3-4b", messages: [{ role: "user", content: "hi" }], max_tokens: 4 });
        statuses.push(res.status);
        await res.arrayBuffer();
      }
      await gw.waitForLog((l) => l.msg === "coordinator connections" && Number(l.over_cap) > 0 && Number(l.timed_out) > 0, 2 * CONNECTION_LOG_INTERVAL_MS);
    } finally {
      clearInterval(sampler);
      attack.stop();
    }
    expect(attack.opened()).toBeGreaterThan(SOCKETS);
    // every request during the flood was served by the agent that was already enrolled
    expect(statuses.length).toBeGreaterThan(0);
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(gw.logs().some((l) => l.msg === "agent disconnected")).toBe(false);
    // the pending cap per address, plus what a refused connection holds for a moment, plus slack: never 2,000
    expect(peak - baseline).toBeLessThan(DEFAULT_GATE_LIMITS.maxPendingPerAddress + 200);
    // a few refusals written whole per interval, one summary per interval, the requests' own lines; not 3 per connection
    const lines = gw.logs().slice(linesBefore);
    const summaries = lines.filter((l) => l.msg === "coordinator connections");
    expect(summaries.length).toBeGreaterThanOrEqual(1);
    expect(lines.length - statuses.length).toBeLessThan(100);
    expect(summaries.reduce((n, l) => n + Number(l.opened) + Number(l.over_cap), 0)).toBeGreaterThan(SOCKETS);
  }, 90_000);
});
