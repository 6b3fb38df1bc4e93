// DESIGN §7 agents take several coordinators: the one reconnecting link (src/link/link.ts) given `URL,URL` moves to
// the next coordinator when its connection drops, at once (a closed socket, not a missed heartbeat). Two in-process
// WebSocket servers stand for the coordinators.
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import { Backoff } from "../../../../src/link/backoff.ts";
import { Link } from "../../../../src/link/link.ts";
import { checkCoordinatorUrl } from "../../../../src/link/ws-url.ts";

const servers: WebSocketServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

async function coordinator(): Promise<{ url: string; server: WebSocketServer }> {
  const server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  servers.push(server);
  await new Promise((resolve) => server.once("listening", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe("DESIGN §7 Agents with several coordinators", () => {
  it("a link given URL,URL connects to the first, and to the next as soon as the first closes its socket", async () => {
    const [first, second] = await Promise.all([coordinator(), coordinator()]);
    const opened: string[] = [];
    first.server.on("connection", (ws) => setTimeout(() => ws.terminate(), 10));
    const link = new Link<unknown, unknown>(
      // a long heartbeat: only the closed socket can make it move on
      { url: `${first.url},${second.url}`, path: "/v1/agent", read: () => undefined, maxPayload: 1024, heartbeatMs: 60_000, backoff: new Backoff(0, 0) },
      { open: () => void opened.push(link.url), message: () => undefined },
    );
    link.start();
    await expect.poll(() => opened).toEqual([first.url, second.url]);
    await link.close();
  });

  it("--coordinator takes one http(s) URL or several, comma-separated; each must be one", () => {
    expect(checkCoordinatorUrl("http://a:1,https://b:2")).toBe("http://a:1,https://b:2");
    expect(() => checkCoordinatorUrl("http://a:1,ws://b:2")).toThrow("--coordinator ws://b:2: expected an http:// or https:// URL");
  });
});
