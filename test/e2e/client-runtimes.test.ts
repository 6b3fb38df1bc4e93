// The client package in Deno and Bun (issue 42 item 1: one code base for Node, Deno, Bun and browsers): the copy
// client-package.test.ts installs alone (npm pack client/, installed offline, scripts ignored) is imported by name from
// a plain script that Deno (network to 127.0.0.1 only) and Bun each run, making one sealed JSON completion and one
// sealed stream to a started gateway and agent and verifying both saved answers with the package's own verifier.
// Node runs the same script as the control: each runtime gets the very answer Node does.
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installClientAlone, type ClientInstall } from "../../bench/client-install.ts";
import { startGateway, type GatewayProcess } from "../fixtures/gateway.ts";
import { runtimeBinary } from "../fixtures/runtimes.ts";
import { tempDir } from "../fixtures/tiny-catalog.ts";

const ROOT = join(import.meta.dirname, "../..");

/** One sealed JSON completion and one sealed stream, each saved and verified; what it prints is the same in every runtime that works. */
const SCRIPT = `
import { createSealedFetch, verifySavedResponse } from "svc-agent-client";
const [baseURL, apiKey, catalog, prompt, providerId] = globalThis.Deno ? Deno.args : process.argv.slice(2);
const posted = [];
const recording = async (input, init) => {
  const request = new Request(input, init);
  if (request.method === "POST") posted.push({ type: request.headers.get("content-type"), holdsPrompt: (await request.clone().text()).includes(prompt) });
  return fetch(request);
};
const sealed = createSealedFetch({ baseURL, apiKey, catalog: JSON.parse(catalog), fetch: recording });
const ask = (stream) => sealed(baseURL + "/chat/completions", {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ model: "qwen3-4b", messages: [{ role: "user", content: prompt }], max_tokens: 8, temperature: 0, seed: 1, stream }),
});
const out = {};
for (const [name, stream] of [["json", false], ["stream", true]]) {
  const answer = await ask(stream);
  const text = await answer.text();
  // held to the provider the test started: the client itself already held it to the candidate that answered
  const verdict = verifySavedResponse(text, { providerId });
  out[name] = { status: answer.status, type: answer.headers.get("content-type"), kind: verdict.saved.kind, content: verdict.saved.content,
    verdict: [verdict.status, verdict.valid, verdict.problems] };
}
out.posted = posted;
console.log(JSON.stringify(out));
`;

let dir: string;
let client: ClientInstall;
let gw: GatewayProcess;
let catalog: string;

beforeAll(async () => {
  dir = tempDir("svc-client-runtimes-");
  client = installClientAlone(ROOT, dir);
  writeFileSync(join(client.app, "sealed.mjs"), SCRIPT);
  gw = await startGateway({ aliases: [{ alias: "qwen3-4b", seed: 1 }] });
  catalog = readFileSync(gw.tiny.catalogPath, "utf8");
}, 180_000);
afterAll(async () => {
  await gw?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

interface Run {
  json: { status: number; type: string; kind: string; content: string; verdict: unknown[] };
  stream: { status: number; type: string; kind: string; content: string; verdict: unknown[] };
  posted: { type: string; holdsPrompt: boolean }[];
}

const prompt = `canary-${Math.random().toString(36).slice(2)}`;

/** Runs sealed.mjs from the installed project with `command`; each runtime's own caches go under the test's temp dir. */
function run(command: string, args: string[]): Run {
  const env = { PATH: process.env.PATH, HOME: dir, DENO_DIR: join(dir, "deno"), DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1", BUN_INSTALL_CACHE_DIR: join(dir, "bun") };
  const child = spawnSync(command, [...args, "sealed.mjs", gw.baseURL, gw.key, catalog, prompt, gw.providerId], { cwd: client.app, env, encoding: "utf8", timeout: 120_000 });
  expect(child.stderr).toBe("");
  expect(child.status).toBe(0);
  return JSON.parse(child.stdout) as Run;
}

let control: Run;

describe("svc-agent-client in each runtime: one sealed JSON completion and one sealed stream, both receipts verified", () => {
  it("node (the control): both answers signed by the gateway's provider and valid, the stream's text the JSON one's, only sealed bytes posted", () => {
    control = run(process.execPath, []);
    expect(control.json).toEqual({ status: 200, type: expect.stringMatching(/^application\/json/), kind: "response", content: expect.any(String), verdict: ["valid", true, []] });
    expect(control.stream).toEqual({ status: 200, type: expect.stringMatching(/^text\/event-stream/), kind: "stream", content: control.json.content, verdict: ["valid", true, []] });
    expect(control.json.content).not.toBe("");
    expect(control.posted).toEqual([{ type: "application/svc-sealed+json", holdsPrompt: false }, { type: "application/svc-sealed+json", holdsPrompt: false }]);
  });

  it("deno 2.9.6, with network access to 127.0.0.1 alone: the same as node", () => {
    const deno = runtimeBinary("deno");
    expect(spawnSync(deno, ["--version"], { encoding: "utf8" }).stdout).toMatch(/^deno 2\.9\.6 /);
    expect(run(deno, ["run", "--allow-net=127.0.0.1"])).toEqual(control);
  });

  it("bun 1.4.5: the same as node", () => {
    const bun = runtimeBinary("bun");
    expect(spawnSync(bun, ["--version"], { encoding: "utf8" }).stdout).toBe("1.4.5\n");
    expect(run(bun, [])).toEqual(control);
  });
});
