// The published package (README "Install"): `npm pack` holds exactly the build, the catalog and the docs, and every
// link in its README and docs resolves inside it; the tarball installs into an empty folder offline with every
// install script skipped (none is needed: README "Requirements"), and its bins run compiled JavaScript, serve, and
// stop cleanly on SIGTERM. `npm run build` keeps a current dist/ as it is. SVC_TEST_NPM_CLI names another npm's
// npm-cli.js to install with (CI's Node 24 cell: npm 12).
import { execFile, execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildInputsDigest, STAMP_FILE } from "../../scripts/build-inputs.ts";
import { runNode } from "../../harness/cli.ts";
import { startProcess } from "../../harness/process.ts";
import { waitForReady } from "../../harness/ready.ts";
import { makeTinyCatalog, tempDir, type TinyCatalog } from "../fixtures/tiny-catalog.ts";

const ROOT = join(import.meta.dirname, "../..");
/** The npm that installs the tarball: this machine's, or the npm-cli.js SVC_TEST_NPM_CLI names (run by this node). */
const npmCommand = (args: string[]): [string, string[]] => {
  const cli = process.env.SVC_TEST_NPM_CLI;
  return cli === undefined ? [process.platform === "win32" ? "npm.cmd" : "npm", args] : [process.execPath, [cli, ...args]];
};
const npm = (args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }) => spawnSync(...npmCommand(args), { ...options, encoding: "utf8" });
/** A command to its end, as spawnSync runs it, without holding the event loop: the installed tarball's tests run side by side. */
const run = (command: string, args: string[], options: { cwd?: string; timeout?: number } = {}) =>
  new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(command, args, { ...options, encoding: "utf8" }, (err, stdout, stderr) =>
      resolve({ status: err === null ? 0 : typeof err.code === "number" ? err.code : null, stdout, stderr }));
  });
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  name: string;
  version: string;
  dependencies: Record<string, string>;
  bin: Record<string, string>;
  homepage: string;
  bugs: { url: string };
};
const lock = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8")) as { packages: Record<string, { dev?: boolean }> };

let dir: string;
let tarball: string;
let packed: string[];
let app: string;
let tiny: TinyCatalog;

/**
 * An empty project that depends on the tarball, with a lock that pins the tarball and every runtime package at
 * the versions and places package-lock.json gives them: `npm ci --offline` then fetches nothing, taking each
 * package from the npm cache that installing this repository filled (npm ci caches tarballs, not the registry
 * metadata a lockless `npm install` would ask for).
 */
function appLockedTo(tgz: string): string {
  const folder = join(dir, "app");
  execFileSync("mkdir", ["-p", folder]);
  const spec = `file:${tgz}`;
  const packages: Record<string, unknown> = {
    "": { name: "app", dependencies: { "svc-agent": spec } },
    "node_modules/svc-agent": {
      version: pkg.version,
      resolved: spec,
      integrity: `sha512-${createHash("sha512").update(readFileSync(tgz)).digest("base64")}`,
      dependencies: pkg.dependencies,
      bin: pkg.bin,
    },
  };
  for (const [path, entry] of Object.entries(lock.packages)) if (path !== "" && !entry.dev) packages[path] = entry;
  writeFileSync(join(folder, "package.json"), JSON.stringify({ name: "app", private: true, dependencies: { "svc-agent": spec } }));
  writeFileSync(join(folder, "package-lock.json"), JSON.stringify({ name: "app", lockfileVersion: 3, requires: true, packages }));
  return folder;
}

const bin = (name: string) => join(app, "node_modules", ".bin", name);

beforeAll(() => {
  dir = tempDir("svc-package-");
  tiny = makeTinyCatalog([{ alias: "tiny-random", seed: 7 }]);
  // prepare runs the build first, as it does before `npm publish`
  const packing = npm(["pack", "--json", "--pack-destination", dir], { cwd: ROOT });
  if (packing.status !== 0) throw new Error(`npm pack exited ${packing.status}:\n${packing.stderr}`);
  // npm 11 prints a list of packed packages, npm 12 an object keyed by name
  type Packed = { filename: string; files: { path: string }[] };
  const printed = JSON.parse(packing.stdout) as Packed[] | Record<string, Packed>;
  const pack = Array.isArray(printed) ? printed : Object.values(printed);
  tarball = join(dir, pack[0]!.filename);
  packed = pack[0]!.files.map((f) => f.path).sort();
  app = appLockedTo(tarball);
  // every dependency's install script skipped, as npm 12 skips them for a user whose policy allows none
  const install = npm(["ci", "--offline", "--ignore-scripts", "--no-audit", "--no-fund"], { cwd: app });
  if (install.status !== 0) throw new Error(`npm ci --offline exited ${install.status}:\n${install.stdout}\n${install.stderr}`);
  expect(install.stderr).not.toContain("EBADENGINE");
}, 600_000);

afterAll(() => {
  tiny?.cleanup();
  execFileSync("rm", ["-rf", dir]);
});

describe("npm pack", () => {
  it("holds the build, the catalog, package.json and the docs: no sources, tests, bench or scratch", () => {
    const outside = packed.filter((p) => !p.startsWith("dist/"));
    const docs = ["api", "architecture", "configuration", "operator-guide", "provider-guide", "security", "troubleshooting", "verifying"].map((d) => `docs/${d}.md`);
    expect(outside).toEqual(["LICENSE", "README.md", "RECEIPTS.md", "SEALING.md", "bench/README.md", ...docs, "models.lock.json", "package.json"]);
    expect(packed).not.toContain(`dist/${STAMP_FILE}`);
    expect(packed).toEqual(expect.arrayContaining(["dist/bin/svc-agent.js", "dist/bin/svc-gateway.js", "dist/index.js", "dist/index.d.ts", "dist/gateway/web/verify/client.js", "dist/client/index.js", "dist/client/browser.js", "dist/client/public-types.d.ts"]));
    expect(packed.filter((p) => /^dist\/(test|bench|scripts|tiny-model)\//.test(p) || /\.test\.|\.tmp$|\.gguf$/.test(p))).toEqual([]);
  });

  it("leaves out the agent's test-only fault switches (issue 44): the build has them, the tarball does not", () => {
    expect(existsSync(join(ROOT, "dist", "agent", "daemon", "test-faults.js"))).toBe(true);
    expect(packed.filter((p) => p.includes("test-faults"))).toEqual([]);
  });

  it("every relative link in its README and docs resolves to a file it holds", () => {
    const broken: string[] = [];
    for (const file of packed.filter((p) => p.endsWith(".md"))) {
      for (const [, target] of readFileSync(join(ROOT, file), "utf8").matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target!) || target!.startsWith("#")) continue;
        if (!packed.includes(normalize(join(dirname(file), target!.split("#")[0]!)))) broken.push(`${file} -> ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("package.json's homepage and bugs lead to the package's README and troubleshooting page once published", () => {
    // no public repository exists to name: both point at the registry's copies of files the tarball holds
    expect(pkg.homepage).toBe(`https://www.npmjs.com/package/${pkg.name}#readme`);
    const published = `https://cdn.jsdelivr.net/npm/${pkg.name}/`;
    expect(pkg.bugs.url.startsWith(published)).toBe(true);
    expect(packed).toContain(pkg.bugs.url.slice(published.length));
  });
});

describe("npm run build", () => {
  it("keeps a dist/ built from the same inputs as it is: the first `npx svc-agent` in a clone runs it, as prepare", async () => {
    // `npm pack` above built dist/ or found it current
    expect(readFileSync(join(ROOT, "dist", STAMP_FILE), "utf8")).toBe(buildInputsDigest(ROOT));
    const before = statSync(join(ROOT, "dist", "index.js")).mtimeMs;
    const build = await runNode(["--import", "tsx", "scripts/build.ts"], { cwd: ROOT });
    expect([build.code, build.stdout, build.stderr]).toEqual([0, "", `${join(ROOT, "dist")} is current: built from these sources already\n`]);
    expect(statSync(join(ROOT, "dist", "index.js")).mtimeMs).toBe(before);
  });

  it("its inputs' digest changes when a source changes, is added or is removed", () => {
    const copy = join(dir, "inputs");
    for (const path of ["tsconfig.json", "tsconfig.build.json", "index.d.ts", "bin", "src"]) cpSync(join(ROOT, path), join(copy, path), { recursive: true });
    const first = buildInputsDigest(copy);
    writeFileSync(join(copy, "src", "errors.ts"), `${readFileSync(join(copy, "src", "errors.ts"), "utf8")}\n`);
    const edited = buildInputsDigest(copy);
    writeFileSync(join(copy, "agent.ts"), "export {};\n"); // outside the included folders: not an input
    expect(buildInputsDigest(copy)).toBe(edited);
    writeFileSync(join(copy, "src", "added.ts"), "export {};\n");
    const added = buildInputsDigest(copy);
    rmSync(join(copy, "src", "added.ts"));
    rmSync(join(copy, "src", "errors.ts"));
    expect(new Set([first, edited, added, buildInputsDigest(copy)]).size).toBe(4);
  });
});

describe.concurrent("the installed tarball", () => {
  it("svc-agent catalog lists the bundled catalog; svc-gateway --help and --version answer", async () => {
    const [catalog, help, version] = await Promise.all([run(bin("svc-agent"), ["catalog"]), run(bin("svc-gateway"), ["--help"]), run(bin("svc-agent"), ["--version"])]);
    expect([catalog.status, catalog.stderr]).toEqual([0, ""]);
    expect(catalog.stdout).toMatch(/^ALIAS +HUB ID/);
    expect(catalog.stdout).toMatch(/^qwen3-4b \(default\) +Qwen\/Qwen3-4B-GGUF /m);
    expect([help.status, help.stderr]).toEqual([0, ""]);
    expect(help.stdout).toMatch(/^Usage: svc-gateway \[options\] \[command\]/);
    expect(help.stdout).toContain("serve");
    expect(version.stdout.trim()).toBe(pkg.version);
  });

  it("svc-agent start refuses --test-fault as an unknown option: an installed agent cannot be made faulty (issue 44)", async () => {
    const start = await run(bin("svc-agent"), ["start", "--coordinator", "http://127.0.0.1:1", "--test-fault", "receipt=tamper"], { timeout: 30_000 });
    expect([start.status, start.stdout, start.stderr]).toEqual([64, "", "svc-agent: unknown option '--test-fault'; see --help\n"]);
  });

  it("`npx svc-agent catalog` in the project runs the installed bin", async () => {
    const npx = await run(...npmCommand(["exec", "--offline", "--", "svc-agent", "catalog"]), { cwd: app });
    expect(npx.status, npx.stderr).toBe(0);
    expect(npx.stdout).toMatch(/^qwen3-4b \(default\) +Qwen\/Qwen3-4B-GGUF /m);
  });

  it("runs compiled JavaScript: the bins are dist/ files, and tsx is not installed", async () => {
    expect(realpathSync(bin("svc-agent"))).toBe(join(realpathSync(app), "node_modules/svc-agent/dist/bin/svc-agent.js"));
    const tsx = await run(process.execPath, ["-e", "require.resolve('tsx')"], { cwd: app });
    expect(tsx.status).not.toBe(0);
  });

  it("imports the client (createSealedFetch) and the receipt verifier from the package name", async () => {
    const script = `import * as svc from "svc-agent"; console.log(JSON.stringify([Object.keys(svc).sort(), svc.verifyReceipt({}).status]));`;
    const imported = await run(process.execPath, ["--input-type=module", "-e", script], { cwd: app });
    expect(imported.stderr).toBe("");
    expect(JSON.parse(imported.stdout)).toEqual([["RECEIPT_VERSION", "RECEIPT_VERSION_TOOLS", "createSealedFetch", "decodeSavedBytes", "readSavedResponse", "verifyReceipt", "verifySavedResponse"], "invalid"]);
  });

  it("SIGTERM, as a service manager sends it to `node BIN`, stops the gateway and the agent cleanly (exit 0)", async () => {
    const gateway = startProcess(realpathSync(bin("svc-gateway")), [
      "serve", "--port", "0", "--coordinator-port", "0", "--open-enrollment", "--catalog", tiny.catalogPath, "--data-dir", join(dir, "gateway"),
    ], { env: { SVC_OPERATOR_KEYS: "sk-svc_op_package-test-0123456789" }, killAfterMs: 30_000 });
    const agent = startProcess(realpathSync(bin("svc-agent")), [
      "start", "--coordinator", (await waitForReady(gateway, "svc-gateway serve")).coordinator, "--catalog", tiny.catalogPath,
      "--models-dir", tiny.modelsDir, "--data-dir", join(dir, "agent"), "--engine", "synthetic",
    ], { killAfterMs: 30_000 });
    try {
      expect((await waitForReady(agent, "svc-agent start")).aliases).toEqual(["tiny-random"]);
      agent.child.kill("SIGTERM");
      await agent.exited;
      expect([agent.child.exitCode, agent.child.signalCode]).toEqual([0, null]);
      expect(agent.stdout()).toMatch(/svc-agent: stopped\n$/);
      gateway.child.kill("SIGTERM");
      await gateway.exited;
      expect([gateway.child.exitCode, gateway.child.signalCode]).toEqual([0, null]);
      expect(gateway.stdout()).toContain("svc-gateway: stopped");
    } finally {
      await agent.stop();
      await gateway.stop();
    }
  });
});
