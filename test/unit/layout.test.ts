// The house rules of docs/architecture.md's "Layout", checked on the import graph, one line per folder: src/ stands on its
// own and its receipt/ wing on its own inside it, agent/ and gateway/ never reach into each other, the coordinator reaches
// only src/ and two shared gateway wings, client/ only src/, harness/ and bench/ never reach into test/, unit tests start no process, and
// no module imports itself round a circle.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "../..");
const FOLDERS = ["bin", "client", "src", "tiny-model", "agent", "gateway", "scripts", "harness", "bench"];
const PACKAGE_IMPORT = /(?:^|\n)\s*(?:import|export)\b[^"';]*?from\s*["']([^."'][^"']*)["']|\bimport\s*\(\s*["']([^."'][^"']*)["']|(?:^|\n)\s*import\s*["']([^."'][^"']*)["']/g;
const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^"';]*?from\s*["'](\.{1,2}\/[^"']+)["']|\bimport\s+["'](\.{1,2}\/[^"']+)["']|\bimport\s*\(\s*["'](\.{1,2}\/[^"']+)["']/g;

function sources(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".ts") && !f.includes("node_modules"))
    .map((f) => join(folder, f));
}

/** Each source file and the project files it imports (paths relative to the repository root). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of FOLDERS.flatMap(sources)) {
    const text = readFileSync(join(ROOT, file), "utf8");
    const targets = [...text.matchAll(IMPORT)].map((m) => normalize(join(dirname(file), m[1] ?? m[2] ?? m[3]!)));
    graph.set(file, targets);
  }
  return graph;
}

/** The packages a file imports by name (`zod`, `node:fs`), not by path; with `runtime`, only those left after TypeScript erases `import type`. */
function packageImports(file: string, { runtime = false } = {}): string[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  return [...text.matchAll(PACKAGE_IMPORT)].filter((m) => !runtime || !/^\s*import\s+type\b/.test(m[0])).map((m) => m[1] ?? m[2] ?? m[3]!);
}

const graph = importGraph();

/** Every file `entry` reaches through relative imports, itself included (a target outside the tree ends a path). */
function closure(entry: string): string[] {
  const seen = new Set<string>();
  const walk = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const next of graph.get(file) ?? []) walk(next);
  };
  walk(entry);
  return [...seen];
}
const under = (folder: string) => (file: string) => file.startsWith(`${folder}/`);

function violations(from: (f: string) => boolean, allowed: (target: string) => boolean): string[] {
  return [...graph].filter(([file]) => from(file)).flatMap(([file, targets]) => targets.filter((t) => !allowed(t)).map((t) => `${file} -> ${t}`));
}

/** Every import cycle, as one of its members' paths round the loop (Tarjan's strongly connected components). */
function cycles(): string[][] {
  let index = 0;
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    order.set(node, index);
    low.set(node, index++);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (!order.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, order.get(next)!));
    }
    if (low.get(node) !== order.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || graph.get(node)!.includes(node)) found.push(component);
  };
  for (const node of graph.keys()) if (!order.has(node)) visit(node);
  return found;
}

describe("Layout (docs/architecture.md)", () => {
  it("reads every import of the tree", () => {
    // guards the rules below against a pattern that silently matches nothing
    expect(graph.get("gateway/start.ts")).toContain("gateway/routes.ts");
    expect(packageImports("src/receipt/receipt.ts")).toContain("zod");
    expect(packageImports("src/trust/hardware-chain.ts")).toContain("reflect-metadata");
    expect(graph.size).toBeGreaterThan(80);
  });

  it("src/ is shared by every side and imports none of them", () => {
    expect(violations(under("src"), (t) => under("src")(t))).toEqual([]);
  });

  it("src/receipt/ is portable: it imports nothing outside itself and no node: module, so browsers run it", () => {
    expect(violations(under("src/receipt"), (t) => under("src/receipt")(t))).toEqual([]);
    const receipt = [...graph.keys()].filter(under("src/receipt"));
    expect(receipt.flatMap((f) => packageImports(f).filter((p) => p.startsWith("node:") || !/^(zod|canonicalize|eventsource-parser|@noble\/)/.test(p)).map((p) => `${f} -> ${p}`))).toEqual([]);
  });

  it("src/audit/ is portable: the comparison an auditor and anyone re-checking an audit run imports only itself and src/receipt/, no node: module", () => {
    expect(violations(under("src/audit"), (t) => under("src/audit")(t) || under("src/receipt")(t))).toEqual([]);
    expect([...graph.keys()].filter(under("src/audit")).flatMap((f) => packageImports(f).filter((p) => p.startsWith("node:")))).toEqual([]);
  });

  it("the client's whole graph (client/index.ts's transitive imports) holds no node: import and nothing outside src/ and client/ but its bundled catalog, so every runtime runs it", () => {
    const reached = closure("client/index.ts");
    expect(reached).toEqual(expect.arrayContaining(["src/openai/route-request.ts", "src/blind/seal.ts", "src/session/answer-reader.ts", "src/trust/attestation.ts"]));
    expect(reached.filter((f) => !under("client")(f) && !under("src")(f) && f !== "models.lock.json")).toEqual([]);
    // a type from node:crypto is erased (client/engines.ts takes the module itself from the runtime, when it lends one)
    expect(reached.filter((f) => f.endsWith(".ts")).flatMap((f) => packageImports(f, { runtime: true }).filter((p) => p.startsWith("node:")).map((p) => `${f} -> ${p}`))).toEqual([]);
    expect([...new Set(reached.flatMap((f) => (f.endsWith(".ts") ? packageImports(f) : [])).filter((p) => p.startsWith("node:")))]).toEqual(["node:crypto"]);
  });

  it("the evidence check is portable: src/trust/ imports only itself and src/receipt/ and no node: module, but its node side that reads files", () => {
    const nodeSide = ["src/trust/anchor-files.ts", "src/trust/measure.ts"];
    const portable = (f: string) => under("src/trust")(f) && !nodeSide.includes(f);
    expect([...graph.keys()].filter(portable).length).toBeGreaterThanOrEqual(4);
    expect(violations(portable, (t) => portable(t) || under("src/receipt")(t))).toEqual([]);
    expect([...graph.keys()].filter(portable).flatMap((f) => packageImports(f).filter((p) => p.startsWith("node:")).map((p) => `${f} -> ${p}`))).toEqual([]);
  });

  it("client/, the caller's package for gateway-blind requests (DESIGN §10), imports only itself, src/ and the bundled catalog", () => {
    expect([...graph.keys()].filter(under("client")).length).toBeGreaterThan(0);
    expect(violations(under("client"), (t) => under("client")(t) || under("src")(t) || t === "models.lock.json")).toEqual([]);
  });

  it("src/schema/, which the client's request parsing reaches, imports no node: module (its ipv6 format included)", () => {
    const schema = [...graph.keys()].filter(under("src/schema"));
    expect(schema.length).toBeGreaterThan(5);
    expect(schema.flatMap((f) => packageImports(f).filter((p) => p.startsWith("node:")).map((p) => `${f} -> ${p}`))).toEqual([]);
  });

  it("every file the client reaches imports zod as a namespace (`import * as z`), so a bundle shakes out its locales", () => {
    const reached = closure("client/index.ts").filter((f) => f.endsWith(".ts"));
    expect(reached.length).toBeGreaterThan(40);
    const named = reached.filter((f) => /^import \{[^}]*\bz\b[^}]*\} from "zod";/m.test(readFileSync(join(ROOT, f), "utf8")));
    expect(named).toEqual([]);
  });

  it("the sealed format names the route kinds without the request parser (src/openai/route-kinds.ts)", () => {
    expect(graph.get("src/blind/format.ts")).toContain("src/openai/route-kinds.ts");
    expect(graph.get("src/blind/format.ts")).not.toContain("src/openai/route-request.ts");
  });

  it("the catalog's parsing is portable (a caller's client runs it): src/catalog.ts imports no node: module, src/catalog-file.ts reads the file", () => {
    expect(packageImports("src/catalog.ts").filter((p) => p.startsWith("node:"))).toEqual([]);
    expect(graph.get("src/catalog.ts")).not.toContain("src/process/package-root.ts");
  });

  it("agent/ never imports gateway/, nor gateway/ agent/", () => {
    expect(violations(under("agent"), (t) => !under("gateway")(t))).toEqual([]);
    expect(violations(under("gateway"), (t) => !under("agent")(t))).toEqual([]);
  });

  it("the coordinator imports only src/, gateway/http/ and gateway/routing/", () => {
    const allowed = ["src", "gateway/http", "gateway/routing", "gateway/coordinator"];
    expect(violations(under("gateway/coordinator"), (t) => allowed.some((folder) => under(folder)(t)))).toEqual([]);
  });

  it("the gateway's HTTP and routing wings serve gateway and coordinator alike, so they import only src/", () => {
    expect(violations(under("gateway/http"), (t) => under("src")(t) || under("gateway/http")(t))).toEqual([]);
    expect(violations(under("gateway/routing"), (t) => under("src")(t) || under("gateway/routing")(t))).toEqual([]);
  });

  it("served code never loads the tiny test model", () => {
    const served = (f: string) => ["bin", "src", "agent", "gateway"].some((folder) => under(folder)(f));
    expect(violations(served, (t) => !under("tiny-model")(t))).toEqual([]);
  });

  it("harness/ serves test/ and bench/ alike, so neither it nor bench/ imports test/, and it imports no bench/", () => {
    expect(violations(under("bench"), (t) => !under("test")(t))).toEqual([]);
    expect(violations(under("harness"), (t) => !under("test")(t) && !under("bench")(t))).toEqual([]);
  });

  it("unit tests start no process and load no model: no harness/, child_process or llama.cpp model", () => {
    const unit = sources("test/unit");
    expect(unit.length).toBeGreaterThan(30);
    const forbidden = unit.flatMap((file) => {
      const text = readFileSync(join(ROOT, file), "utf8");
      const paths = [...text.matchAll(IMPORT)].map((m) => normalize(join(dirname(file), m[1] ?? m[2] ?? m[3]!)));
      const bad = [
        ...paths.filter((t) => under("harness")(t) || t === "test/fixtures/tiny-llama.ts" || t === "agent/engine/engine.ts"),
        ...packageImports(file).filter((p) => p === "node:child_process"),
        ...(/\bgetLlama\(/.test(text) ? ["node-llama-cpp getLlama"] : []),
      ];
      return bad.map((b) => `${file} -> ${b}`);
    });
    expect(forbidden).toEqual([]);
  });

  it("no import cycles", () => {
    expect(cycles().map((c) => c.map((f) => relative(ROOT, join(ROOT, f))))).toEqual([]);
  });
});
