// The docs a newcomer reads (README.md, docs/*.md and the pages they link): every relative link leads to a
// file in this repository and, with a #fragment, to a heading there, and to the heading its text names; no page has
// two headings a link cannot tell apart; every `--flag` they name is one a command takes (the kind of drift that left
// a `--keep-alive` documented after `start` stopped taking it), and every function they name in code (`Foo.bar`,
// `fooBar()`) is still in the source (issue 44: `Engine.run` outlived its method).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import type { Command } from "commander";
import { describe, expect, it } from "vitest";
import { agentProgram } from "../../agent/cli.ts";
import { gatewayProgram } from "../../gateway/cli.ts";
import { ERROR_CODES } from "../../src/errors.ts";
import { missingBrowser } from "../fixtures/browser.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const PAGES = ["README.md", "RECEIPTS.md", "SEALING.md", "bench/README.md", "client/README.md", ...readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];

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

/** A heading's text as a reader sees it: code spans and emphasis unwrapped, lower case, spaces squeezed. */
const headingText = (text: string) => text.replace(/[`*_]/g, "").replace(/\s+/g, " ").trim().toLowerCase();

/** Each heading of a page (outside fenced code) with its anchor, in order. */
export function headings(markdown: string): { level: number; text: string; anchor: string }[] {
  const found: { level: number; text: string; anchor: string }[] = [];
  const seen = new Map<string, number>();
  for (const m of markdown.replace(/^```[\s\S]*?^```/gm, "").matchAll(/^(#{1,6})\s+(.+?)\s*#*\s*$/gm)) {
    const base = m[2]!.toLowerCase().replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, "").replace(/\s/g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    found.push({ level: m[1]!.length, text: headingText(m[2]!), anchor: n === 0 ? base : `${base}-${n}` });
  }
  return found;
}

/** Headings whose anchor an earlier heading has already taken (GitHub numbers the second `-1`). */
function duplicateHeadings(markdown: string): string[] {
  const all = headings(markdown);
  return all.filter((h) => /-\d+$/.test(h.anchor) && all.some((o) => o.anchor === h.anchor.replace(/-\d+$/, ""))).map((h) => h.text);
}

/** Links on `page` (its text, unless given) whose text is a heading of the page they point at, but whose #fragment is another heading's. */
function misdirectedLinks(page: string, text = readFileSync(join(ROOT, page), "utf8")): string[] {
  const wrong: string[] = [];
  for (const m of prose(text.replace(/`([^`\n]*)`/g, "$1")).matchAll(/\[([^\]]+)\]\(([^)\s#]*)#([^)\s]+)\)/g)) {
    const [, label, path, fragment] = m as unknown as [string, string, string, string];
    if (/^[a-z][a-z0-9+.-]*:/i.test(path)) continue;
    const file = path === "" ? join(ROOT, page) : resolve(dirname(join(ROOT, page)), path);
    if (!existsSync(file) || !statSync(file).isFile()) continue;
    // a page's title (its one # heading) names the page: "[architecture](architecture.md#layout)" links into it
    const named = headings(readFileSync(file, "utf8")).filter((h) => h.level > 1 && h.text === headingText(label));
    if (named.length > 0 && !named.some((h) => h.anchor === fragment)) wrong.push(`${page}: [${label}](${path}#${fragment}) should be #${named[0]!.anchor}`);
  }
  return wrong;
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

const SOURCE_DIRS = ["bin", "client", "src", "agent", "gateway", "scripts", "harness", "bench", "tiny-model", "test"];
const SOURCES = new Map(
  SOURCE_DIRS.flatMap((dir) =>
    readdirSync(join(ROOT, dir), { recursive: true, encoding: "utf8" })
      .filter((f) => f.endsWith(".ts") && !f.includes("node_modules") && !f.startsWith("dist/"))
      .map((f) => [join(dir, f), readFileSync(join(ROOT, dir, f), "utf8")] as const),
  ),
);

/** Names JavaScript and Node give every program: `JSON.stringify`, `setTimeout(…)` need no declaration of ours. */
const GLOBALS = new Set([
  "JSON", "Math", "Promise", "Object", "Array", "Number", "String", "Date", "Buffer", "URL", "Symbol", "Reflect", "setTimeout", "setInterval", "clearTimeout", "fetch", "require", "structuredClone",
  // the client SDKs' own, which RECEIPTS.md and docs/verifying.md name beside ours (what each adds to a saved answer)
  "model_dump_json", "finalChatCompletion",
]);

/** Whether `name` is declared anywhere in the source: a function, class, type, variable, or a method or field. */
function declared(name: string): boolean {
  const declaration = new RegExp(`(?:function\\*?|class|interface|type|enum|const|let|var)\\s+${name}\\b|^\\s*(?:(?:export|public|private|protected|static|readonly|async|override|get|set|declare|abstract)\\s+)*\\*?${name}\\s*[(<:=?!]`, "m");
  return [...SOURCES.values()].some((text) => declaration.test(text));
}

/** Whether the class, interface or type `owner` declared in the source has a member `member`; undefined when `owner` is none of ours. */
function hasMember(owner: string, member: string): boolean | undefined {
  const files = [...SOURCES.values()].filter((text) => new RegExp(`(?:class|interface|type|enum)\\s+${owner}\\b`).test(text));
  if (files.length === 0) return undefined;
  const definition = new RegExp(`^\\s*(?:(?:public|private|protected|static|readonly|async|override|get|set|declare|abstract)\\s+)*\\*?${member}\\s*[(<:=?!]`, "m");
  return files.some((text) => definition.test(text));
}

/** Functions a page names in code spans (`Foo.bar`, `Foo.bar()`, `fooBar()`) that the source no longer has. */
function missingFunctions(page: string): string[] {
  const missing: string[] = [];
  for (const [, span] of readFileSync(join(ROOT, page), "utf8").matchAll(/`([^`\n]+)`/g)) {
    const method = /^([A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)\.([a-z_$][\w$]*)(?:\(.*\))?$/.exec(span!);
    if (method) {
      const [, owner, member] = method as unknown as [string, string, string];
      const found = GLOBALS.has(owner) ? true : hasMember(owner, member);
      if (found === false) missing.push(`${page}: ${span} (${owner} has no ${member})`);
      else if (found === undefined && !declared(owner)) missing.push(`${page}: ${span} (no ${owner} in the source)`);
      continue;
    }
    const call = /^([a-z_$][\w$]*)\(.*\)$/.exec(span!);
    if (call && !GLOBALS.has(call[1]!) && !declared(call[1]!)) missing.push(`${page}: ${span} (no ${call[1]} in the source)`);
  }
  return missing;
}

function flagsOf(command: Command): string[] {
  return [...command.options.flatMap((o) => [o.long, o.short].filter((f): f is string => f !== undefined)), ...command.commands.flatMap(flagsOf)];
}

// flags of other programs the docs show beside ours (systemctl, journalctl, npm, npx, xcode-select, npm run bench)
const OTHER_TOOLS = ["--user", "--quick", "--only", "--install", "--no", "--no-audit", "--no-fund", "--no-install-recommends", "--dry-run", "--noEmit", "--reporter", "--strict-allow-scripts", "--allow-scripts"];

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

  it("no page has two headings with one anchor: a link to it could only reach the first", () => {
    expect(duplicateHeadings("# A\n## Usage\n```\n# comment\n```\n## Usage\n")).toEqual(["usage"]); // the check can fail
    expect(PAGES.flatMap((page) => duplicateHeadings(readFileSync(join(ROOT, page), "utf8")).map((h) => `${page}: ${h}`))).toEqual([]);
  });

  it("a link whose text names a heading of its target goes to that heading, not another", () => {
    expect(headings("## Running more than one gateway\n## `svc-gateway serve`\n").map((h) => h.text)).toEqual(["running more than one gateway", "svc-gateway serve"]);
    // the check can fail: a link named for one section that lands on another
    expect(misdirectedLinks("README.md", "see [Usage](docs/operator-guide.md#rate-limits), [Usage](docs/operator-guide.md#usage)")).toEqual([
      "README.md: [Usage](docs/operator-guide.md#rate-limits) should be #usage",
    ]);
    expect(PAGES.flatMap((page) => misdirectedLinks(page))).toEqual([]);
  });

  it("every function named in code (`Foo.bar`, `fooBar()`) is still in the source", () => {
    // guards against a check that finds nothing: each of these is a real one, and a gone one is found gone
    expect([hasMember("Engine", "generate"), hasMember("Engine", "run"), declared("samplerOptions"), declared("noSuchFunctionAnywhere")]).toEqual([true, false, true, false]);
    expect(PAGES.flatMap(missingFunctions)).toEqual([]);
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
