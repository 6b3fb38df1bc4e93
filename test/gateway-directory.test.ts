// SPEC §4.2/§4.3: a directory that cannot list gives 502 directory_unavailable with `wait`, on every route that
// needs it. The gateway's HTTP server runs in-process here with a fake directory that fails (a unit test of
// the server module; the end-to-end tests use the real engine).
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OperatorKeys } from "../gateway/auth.ts";
import type { Directory } from "../gateway/directory.ts";
import { createGatewayServer } from "../gateway/server.ts";
import { parseCatalog } from "../src/catalog.ts";

const KEY = "sk-svc_test";
const catalog = parseCatalog({
  version: 1,
  default: "qwen3-4b",
  models: [
    {
      alias: "qwen3-4b",
      hub_id: "Qwen/Qwen3-4B-GGUF",
      file: "Qwen3-4B-Q4_K_M.gguf",
      revision: "a".repeat(40),
      sha256: "b".repeat(64),
      size_bytes: 1,
      min_memory_gb: 10,
      license: "Apache-2.0",
    },
  ],
});
let opened = 0;
const unreachable: Directory = {
  list: () => Promise.reject(new Error("connect ECONNREFUSED 127.0.0.1:8081")),
  open: () => {
    opened++;
    throw new Error("must not be called");
  },
  close: () => Promise.resolve(),
};

let server: Server;
let url: string;
beforeAll(async () => {
  server = createGatewayServer(
    { catalog, directory: unreachable, floor: "process", keys: new OperatorKeys([KEY]), keepaliveMs: 10_000, bodyLimitBytes: 1 << 20 },
    pino({ level: "silent" }),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const unavailable = {
  error: { message: expect.any(String), type: "api_error", code: "directory_unavailable", param: null, svc_action: "wait" },
};
const auth = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };
const body = JSON.stringify({ messages: [{ role: "user", content: "hi" }] });

describe("§4.2 and §4.3: when the directory cannot list", () => {
  it.each(["/v1/models", "/v1/providers"])("GET %s → 502 directory_unavailable, wait", async (path) => {
    const res = await fetch(`${url}${path}`, { headers: auth });
    expect(res.status).toBe(502);
    expect(await res.json()).toEqual(unavailable);
  });

  it("POST /v1/chat/completions → 502 directory_unavailable; a stream gets it in a data line", async () => {
    const res = await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: auth, body });
    expect(res.status).toBe(502);
    expect(await res.json()).toEqual(unavailable);
    const stream = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], stream: true }),
    });
    const events = (await stream.text()).split("\n\n");
    expect(events.pop()).toBe(""); // the last event is complete
    const last = events.at(-1)!;
    expect(last.startsWith("data: ")).toBe(true);
    expect(JSON.parse(last.slice("data: ".length))).toEqual(unavailable);
    expect(events).not.toContain("data: [DONE]");
    expect(opened).toBe(0);
  });
});
