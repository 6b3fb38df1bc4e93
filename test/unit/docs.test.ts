// The docs a newcomer reads (README.md, docs/*.md and the pages they link): every relative link leads to a
// file in this repository and, with a #fragment, to a heading there; every `--flag` they name is one a
// command takes (the kind of drift that left a `--keep-alive` documented after `start` stopped taking it).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import type { Command } from "commander";
import { describe, expect, it } from "vitest";
import { agentProgram } from "../../agent/cli.ts";
import { gatewayProgram } from "../../gateway/cli.ts";
import { ERROR_CODES } from "../../src/errors.ts";
import { missingBrowser } from "../fixtures/browser.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const PAGES = ["README.md", "RECEIPTS.md", "bench/README.md", ...readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];

/** Text without fenced code blocks and inline code, where `[x](y)` is not a link. */
const prose = (text: string) => text.replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "");

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of markdown.replace(/^```[\s\S]*?^```/gm, "").matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = m[1]!.toLowerCase().replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, "").replace(/\s/g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Each relative link on a page that does not resolve, as `page: target (why)`. */
function brokenLinks(page: string): string[] {
  const text = readFileSync(join(ROOT, page), "utf8");
  const broken: string[] = [];
  for (const m of prose(text).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const target = m[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
    const [path, fragment] = target.split("#") as [string, string | undefined];
    const file = path === "" ? join(ROOT, page) : resolve(dirname(join(ROOT, page)), path);
    if (relative(ROOT, file).startsWith("..")) broken.push(`${page}: ${target} (outside the repository)`);
    else if (!existsSync(file)) broken.push(`${page}: ${target} (no such file)`);
    else if (fragment !== undefined && statSync(file).isFile() && !anchors(readFileSync(file, "utf8")).has(fragment)) {
      broken.push(`${page}: ${target} (no heading #${fragment} in ${relative(ROOT, file)})`);
    }
  }
  return broken;
}

function flagsOf(command: Command): string[] {
  return [...command.options.flatMap((o) => [o.long, o.short].filter((f): f is string => f !== undefined)), ...command.commands.flatMap(flagsOf)];
}

// flags of other programs the docs show beside ours (systemctl, journalctl, npm, npx, xcode-select)
const OTHER_TOOLS = ["--user", "--quick", "--install", "--no", "--no-audit", "--no-fund", "--no-install-recommends", "--dry-run", "--noEmit", "--reporter", "--strict-allow-scripts", "--allow-scripts"];

describe("docs", () => {
  it("finds the pages and their links", () => {
    // guards the checks below against patterns that silently match nothing
    expect(PAGES).toContain("docs/api.md");
    expect(anchors("## The gateway's API (SPEC §2–§8)\n### `svc-gateway keys list` / `keys limit`\n## Usage\n## Usage")).toEqual(
      new Set(["the-gateways-api-spec-28", "svc-gateway-keys-list--keys-limit", "usage", "usage-1"]),
    );
    expect([...prose(readFileSync(join(ROOT, "README.md"), "utf8")).matchAll(/\]\((docs\/[^)]+)\)/g)].length).toBeGreaterThan(5);
  });

  it("every relative link in README.md and docs/ leads to a file and heading in the repository", () => {
    expect(PAGES.flatMap(brokenLinks)).toEqual([]);
  });

  it("no page points at SPEC.md or DESIGN.md outside the repository", () => {
    for (const page of PAGES) expect(readFileSync(join(ROOT, page), "utf8"), page).not.toMatch(/\.\.\/shared|(?:SPEC|DESIGN)\.md/);
  });

  it("every --flag the docs name is one a command takes", () => {
    const known = new Set([...flagsOf(agentProgram()), ...flagsOf(gatewayProgram()), "--help", "--version", ...OTHER_TOOLS]);
    const unknown: string[] = [];
    // bench/README.md documents `npm run bench`'s own flags; RECEIPTS.md names none
    for (const page of PAGES.filter((p) => p === "README.md" || p.startsWith("docs/"))) {
      for (const m of readFileSync(join(ROOT, page), "utf8").matchAll(/(?<![\w-])--[a-zA-Z][\w-]*/g)) {
        // `--key-*` names a family of flags: some flag must start with it
        const ok = m[0].endsWith("-") ? [...known].some((k) => k.startsWith(m[0])) : known.has(m[0]);
        if (!ok) unknown.push(`${page}: ${m[0]}`);
      }
    }
    expect(unknown).toEqual([]);
  });

  it("the errors table in docs/api.md has every code of src/errors.ts with its status and svc_action, and its Retry-After", () => {
    const page = readFileSync(join(ROOT, "docs", "api.md"), "utf8");
    const section = page.slice(page.indexOf("\n## Errors\n"), page.indexOf("\n## ", page.indexOf("\n## Errors\n") + 1));
    const rows = section.split("\n").filter((line) => line.startsWith("| "));
    const wrong = Object.entries(ERROR_CODES).filter(([code, info]) => {
      const row = rows.find((r) => r.includes(`\`${code}\``));
      const waits = "retryAfterS" in info && !row?.includes("`Retry-After");
      return row === undefined || waits || !row.split("|")[1]!.includes(String(info.status)) || !row.trimEnd().endsWith(`\`${info.action}\` |`);
    });
    expect(wrong.map(([code]) => code)).toEqual([]);
  });

  it("the browser tests say how to get a browser when none is found, as docs/troubleshooting.md does", () => {
    expect(missingBrowser("/nonexistent/chromium")).toMatch(/^no Chromium at \/nonexistent\/chromium: .*apt-get install -y chromium.*SVC_CHROMIUM/);
    expect(readFileSync(join(ROOT, "docs", "troubleshooting.md"), "utf8")).toContain("`no Chromium at …`");
  });
});
