// Liveness on a loaded machine (docs/architecture.md "Faults"): with a busy loop on every core for the whole test, live
// agents are never dropped and every request is answered. The CI-sized form of running the suite under a
// CPU hog; the production heartbeat is in force (no fixture sets another).
import { availableParallelism } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, post, type GatewayProcess } from "../fixtures/gateway.ts";
import { startProcess, type Proc } from "../../harness/process.ts";
import { readSse } from "../../harness/sse.ts";

/** Long enough for several busy heartbeat intervals (2 s) and their allowed silence (4 s) to pass under load (idle: 4.5 s and 9 s). */
const LOADED_MS = 20_000;

let gw: GatewayProcess;
const hogs: Proc[] = [];

beforeAll(async () => {
  gw = await startGateway({ agents: 2, agentArgs: ["--engine", "synthetic", "--synthetic-tokens", "8", "--synthetic-token-ms", "20"] });
  for (let i = 0; i < availableParallelism(); i++) hogs.push(startProcess("-e", ["for (;;) {}"], { name: "cpu hog" }));
}, 60_000);

afterAll(async () => {
  await Promise.all(hogs.map((hog) => hog.kill("SIGKILL")));
  await gw?.stop();
});

describe("Faults: a loaded machine drops no live agent", () => {
  it(`with every core busy for ${LOADED_MS / 1000} s, every request is answered and no agent disconnects`, async () => {
    const chat = { messages: [{ role: "user", content: "hi" }], max_tokens: 8 };
    const deadline = Date.now() + LOADED_MS;
    let answered = 0;
    while (Date.now() < deadline) {
      const whole = await post(gw, "/v1/chat/completions", chat);
      expect(whole.status).toBe(200);
      await whole.json();
      const stream = await readSse(await post(gw, "/v1/chat/completions", { ...chat, stream: true }));
      expect(stream.data.at(-1)).toBe("[DONE]");
      answered += 2;
      // idle gaps too: a quiet link lives on pings alone
      await new Promise((resolve) => setTimeout(resolve, 1_500));
    }
    expect(answered).toBeGreaterThan(0);
    for (const agent of gw.agents) expect(agent.stdout()).not.toContain("disconnected");
    expect(gw.logs().filter((l) => l.msg === "agent dropped")).toEqual([]);
  }, 60_000);
});
