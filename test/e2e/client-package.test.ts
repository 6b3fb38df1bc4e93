// The client package (issue 42 item 1): client/ packed as svc-agent-client holds its bundles and nothing a caller
// would have to build or trust at install; installed alone into an empty project under os.tmpdir() (offline, every
// script ignored, nothing to resolve from this clone) it weighs what the README says, and that installed copy, in a
// plain node process, seals a chat completion to a started gateway and agent and verifies the saved answer.
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installClientAlone, type ClientInstall } from "../../bench/client-install.ts";
import { startGateway, type GatewayProcess } from "../fixtures/gateway.ts";
import { tempDir } from "../fixtures/tiny-catalog.ts";

const ROOT = join(import.meta.dirname, "../..");
const main = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };
/** What the package exports: createSealedFetch and the receipt verifier (client/public-types.d.ts). */
const EXPORTS = ["RECEIPT_VERSION", "RECEIPT_VERSION_TOOLS", "createSealedFetch", "decodeSavedBytes", "readSavedResponse", "verifyReceipt", "verifySavedResponse"];
const MIB = 2 ** 20;

let dir: string;
let client: ClientInstall;
let gw: GatewayProcess;

beforeAll(async () => {
  dir = tempDir("svc-client-package-");
  // the e2e project's set-up built dist/, and with it client/dist/ (scripts/build.ts)
  client = installClientAlone(ROOT, dir);
  gw = await startGateway({ aliases: [{ alias: "qwen3-4b", seed: 1 }] });
}, 180_000);
afterAll(async () => {
  await gw?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** Runs an ES module in a child node from the installed project, as a caller's script would; its stdout as JSON. */
function runInApp(script: string, args: string[] = [], node: string[] = []): unknown {
  const file = join(client.app, `script-${Math.random().toString(36).slice(2)}.mjs`);
  writeFileSync(file, script);
  const run = spawnSync(process.execPath, [...node, file, ...args], { cwd: client.app, encoding: "utf8", timeout: 120_000 });
  expect(run.stderr).toBe("");
  expect(run.status).toBe(0);
  return JSON.parse(run.stdout);
}

describe("npm pack client/: svc-agent-client", () => {
  it("holds dist/, its README and package.json only: the bundles, their types and licences; no native code, no build file", () => {
    expect(client.packed).toEqual(["README.md", "dist/LICENSE", "dist/THIRD-PARTY-LICENSES.txt", "dist/browser.js", "dist/index.d.ts", "dist/index.js", "dist/receipt-types.d.ts", "package.json"]);
    expect(client.packed.filter((p) => p.endsWith(".node") || p.endsWith("binding.gyp"))).toEqual([]);
  });

  it("its package.json: the main package's version, no dependency of any kind, no script, and a browser condition", () => {
    const m = client.manifest;
    expect([m.name, m.version, m.type, m.license]).toEqual(["svc-agent-client", main.version, "module", "Apache-2.0"]);
    for (const key of ["scripts", "dependencies", "optionalDependencies", "peerDependencies", "bundleDependencies", "gypfile"]) expect(m).not.toHaveProperty(key);
    expect(m.exports).toEqual({
      ".": { types: "./dist/index.d.ts", browser: "./dist/browser.js", default: "./dist/index.js" },
      "./package.json": "./package.json",
    });
  });

  it("its types import nothing but each other (no zod or @peculiar type), and a caller's TypeScript compiles against them", () => {
    const types = ["index.d.ts", "receipt-types.d.ts"].map((f) => readFileSync(join(client.app, "node_modules/svc-agent-client/dist", f), "utf8")).join("\n");
    expect(new Set([...types.matchAll(/(?:from\s+|import\(\s*)"([^"]+)"/g)].map((m) => m[1]))).toEqual(new Set(["./receipt-types.js"]));
    writeFileSync(join(client.app, "caller.ts"), [
      `import { createSealedFetch, verifySavedResponse, type ReceiptVerdict, type SealedFetchOptions } from "svc-agent-client";`,
      `const options: SealedFetchOptions = { baseURL: "https://gw.example/v1", floor: "hardware", trustedRoots: [], releaseKeys: ["00"] };`,
      `export const sealed: typeof fetch = createSealedFetch(options);`,
      `export const verdict: ReceiptVerdict["status"] = verifySavedResponse("{}", { providerId: "x" }).status;`,
    ].join("\n"));
    writeFileSync(join(client.app, "tsconfig.json"), JSON.stringify({
      compilerOptions: { strict: true, noEmit: true, module: "nodenext", moduleResolution: "nodenext", target: "es2022", lib: ["es2022", "dom"], types: [] },
      files: ["caller.ts"],
    }));
    const tsc = spawnSync(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", client.app], { encoding: "utf8" });
    expect(tsc.stdout + tsc.stderr).toBe("");
    expect(tsc.status).toBe(0);
  });
});

describe("svc-agent-client installed alone", () => {
  it("is one package, and weighs what the README says (within 10 %)", () => {
    expect(client.packages).toEqual(["svc-agent-client"]);
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    const said = /npm install svc-agent-client`: ([\d.]+) MiB installed/.exec(readme);
    expect(said, "README's install line for the client").not.toBeNull();
    expect(Math.abs(Number(said![1]) * MIB - client.bytes) / client.bytes).toBeLessThan(0.1);
  });

  it("node imports it by name: createSealedFetch and the receipt verifier, from the neutral bundle and, under the browser condition, the browser one", () => {
    const script = `const m = await import("svc-agent-client"); console.log(JSON.stringify([import.meta.resolve("svc-agent-client").replace(/^.*\\/node_modules\\//, ""), Object.keys(m).sort(), m.verifyReceipt({}).status]));`;
    expect(runInApp(script)).toEqual(["svc-agent-client/dist/index.js", EXPORTS, "invalid"]);
    expect(runInApp(script, [], ["--conditions=browser"])).toEqual(["svc-agent-client/dist/browser.js", EXPORTS, "invalid"]);
  });

  it("seals a chat completion to the started gateway's provider, and verifies the saved answer with its own verifier", () => {
    const catalog = join(dir, "catalog.json");
    writeFileSync(catalog, readFileSync(gw.tiny.catalogPath));
    const prompt = `canary-${Math.random().toString(36).slice(2)}`;
    const ask = `
      import { readFileSync } from "node:fs";
      import { createSealedFetch } from "svc-agent-client";
      const [baseURL, apiKey, catalogPath, prompt] = process.argv.slice(2);
      const posted = [];
      const recording = async (input, init) => {
        const request = new Request(input, init);
        if (request.method === "POST") posted.push({ type: request.headers.get("content-type"), body: await request.clone().text() });
        return fetch(request);
      };
      const sealed = createSealedFetch({ baseURL, apiKey, catalog: JSON.parse(readFileSync(catalogPath, "utf8")), fetch: recording });
      const body = JSON.stringify({ model: "qwen3-4b", messages: [{ role: "user", content: prompt }], max_tokens: 8, temperature: 0 });
      const answer = await sealed(baseURL + "/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body });
      const text = await answer.text();
      console.log(JSON.stringify({ status: answer.status, type: answer.headers.get("content-type"), provider: answer.headers.get("x-svc-provider"), text,
        posted: posted.map((p) => ({ type: p.type, holdsPrompt: p.body.includes(prompt) })) }));`;
    const answer = runInApp(ask, [gw.baseURL, gw.key, catalog, prompt]) as { status: number; type: string; provider: string; text: string; posted: unknown[] };
    expect([answer.status, answer.type, answer.provider]).toEqual([200, expect.stringMatching(/^application\/json/), gw.providerId]);
    expect(answer.posted).toEqual([{ type: "application/svc-sealed+json", holdsPrompt: false }]);
    const completion = JSON.parse(answer.text) as { object: string; choices: { message: { content: string } }[]; svc_receipt: { provider_id: string } };
    expect([completion.object, completion.svc_receipt.provider_id]).toEqual(["chat.completion", gw.providerId]);

    // saved as a caller saves it, then checked by the installed package's verifier alone
    const saved = join(dir, "answer.json");
    writeFileSync(saved, answer.text);
    const verify = `
      import { readFileSync } from "node:fs";
      import { decodeSavedBytes, verifySavedResponse } from "svc-agent-client";
      const [file, providerId] = process.argv.slice(2);
      const verdict = verifySavedResponse(decodeSavedBytes(readFileSync(file)), { providerId });
      console.log(JSON.stringify([verdict.status, verdict.valid, verdict.problems, verdict.saved.kind]));`;
    expect(runInApp(verify, [saved, gw.providerId])).toEqual(["valid", true, [], "response"]);
    // and a byte changed in the saved content is caught by the same call
    writeFileSync(saved, answer.text.replace(JSON.stringify(completion.choices[0]!.message.content), JSON.stringify(`${completion.choices[0]!.message.content}!`)));
    expect(runInApp(verify, [saved, gw.providerId])).toEqual(["invalid", false, expect.arrayContaining([expect.stringMatching(/content/)]), "response"]);
  });
});
