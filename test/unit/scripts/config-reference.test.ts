// docs/configuration.md is generated from the commander programs (scripts/config-reference.ts): it must be
// what the code says now, list every environment variable the code reads, and leave the hidden test flags out.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { configReference, DIRECT_ENV, REFERENCE_PATH } from "../../../scripts/config-reference.ts";

const ROOT = join(import.meta.dirname, "../../..");
const committed = readFileSync(REFERENCE_PATH, "utf8");
const generated = configReference();

/** The first line where two texts differ, in words a person can act on; undefined when they are equal. */
function firstDifference(actual: string, expected: string): string | undefined {
  if (actual === expected) return undefined;
  const a = actual.split("\n");
  const e = expected.split("\n");
  for (let i = 0; i < Math.max(a.length, e.length); i++) {
    if (a[i] !== e[i]) {
      return `docs/configuration.md line ${i + 1} differs from the code (run npm run docs:config):\n  file: ${a[i] ?? "(end of file)"}\n  code: ${e[i] ?? "(end of file)"}`;
    }
  }
  return "docs/configuration.md differs from the code (run npm run docs:config)";
}

/** Every `process.env.NAME` (or `env.NAME` / `env["NAME"]`, `.env("NAME")`, a flag table's `env: "NAME"`) in the code the bins and `npm start` run. */
function envReadInCode(): Set<string> {
  const names = new Set<string>();
  for (const folder of ["bin", "src", "agent", "gateway", "scripts", "test/fixtures"]) {
    for (const file of readdirSync(join(ROOT, folder), { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts"))) {
      const text = readFileSync(join(ROOT, folder, file), "utf8");
      for (const m of text.matchAll(/process\.env(?:\.([A-Z][A-Z0-9_]*)|\[\s*["']([A-Z][A-Z0-9_]*)["']\s*\])|\.env\(\s*["']([A-Z][A-Z0-9_]*)["']\s*\)|\benv:\s*["']([A-Z][A-Z0-9_]*)["']/g)) {
        names.add((m[1] ?? m[2] ?? m[3] ?? m[4])!);
      }
    }
  }
  return names;
}

describe("docs/configuration.md", () => {
  it("is what scripts/config-reference.ts writes from the commander programs now", () => {
    const difference = firstDifference(committed, generated);
    expect(difference, difference).toBeUndefined();
  });

  it("names the first differing line when the file drifts", () => {
    const drifted = generated.replace("| `--port <port>` | `8080` |", "| `--port <port>` | `8000` |");
    expect(drifted).not.toBe(generated);
    expect(firstDifference(drifted, generated)).toMatch(/^docs\/configuration\.md line \d+ differs.*\n {2}file: .*`8000`.*\n {2}code: .*`8080`/);
    const truncated = generated.split("\n").slice(0, 10).join("\n");
    expect(firstDifference(truncated, generated)).toMatch(/^docs\/configuration\.md line 11 differs.*\n {2}file: \(end of file\)\n/);
  });

  it("lists every command of both bins with its flags and defaults", () => {
    for (const heading of ["svc-agent start", "svc-agent service install", "svc-agent doctor", "svc-agent verify [file]", "svc-gateway serve", "svc-gateway keys limit <key-id>", "svc-gateway providers enroll"]) {
      expect(generated).toContain(`### \`${heading}\``);
    }
    expect(generated).toContain("| `--port <port>` | `8080` |  | gateway port (0 picks a free one) |");
    expect(generated).toContain("| `--coordinator <url>` | required |");
    expect(generated).toContain("| `--data-dir <dir>` | `~/.svc/gateway` |");
    expect(generated).toContain("| `--token <token>` |  | `SVC_PROVIDER_TOKEN` |");
  });

  it("leaves out the hidden test-only options and has no stale --keep-alive", () => {
    for (const hidden of ["--test-fault", "--heartbeat-ms", "--rechallenge-ms", "--platform", "--keep-alive"]) expect(generated).not.toContain(hidden);
  });

  it("lists every environment variable the code reads", () => {
    const read = envReadInCode();
    // guards the scan against a pattern that silently matches nothing
    expect(read).toContain("SVC_OPERATOR_KEYS");
    expect(read).toContain("SVC_PROVIDER_TOKEN");
    // PATH is copied into the service file as it is; HOME is read through os.homedir()
    const missing = [...read].filter((name) => !["PATH", "HOME"].includes(name) && !generated.includes(`| \`${name}\` |`));
    expect(missing).toEqual([]);
    for (const v of DIRECT_ENV) expect(read, `${v.name} is listed but no code reads it`).toContain(v.name);
  });
});
