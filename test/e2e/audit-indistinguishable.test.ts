// Issue 43 item 2, design §4 "The test": what a provider sees of an audit is what it sees of a caller's request. An
// agent run with the test fault `record=DIR` writes, for every session, the session message's clear fields, when it
// came and the plaintext it opened to. A caller sends each corpus item's body over HTTP; the auditor (rate 1: every
// ordinary session draws an audit) sends the items through its own path. Each audit is set beside the caller's
// session of the same item, and the two must differ only in the values that are fresh for every request.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { canonicalJson } from "../../src/receipt/canonical-json.ts";
import { post, startGateway, type GatewayProcess } from "../fixtures/gateway.ts";
import { makeTinyCatalog } from "../fixtures/tiny-catalog.ts";

/** What the agent wrote of one session (agent/daemon/test-faults.ts `record=`). */
interface Seen {
  at: number;
  keys: string[];
  clear: { t: string; id: string; alias: string; enc: { length: number }; ct: { length: number }; whole?: true };
  plaintext: string;
}

/** Fresh for every request, caller's or audit's: each must have the same format in both, never the same value. */
const FRESH = ["nonce", "seed", "cache_scope", "cache_owner", "client_nonce"] as const;

const WEATHER = { type: "object", properties: { city: { type: "string", maxLength: 12 } }, required: ["city"], additionalProperties: false };
/** The corpus: one item per shape the audit can take, each with its own text so a session shows which item it is. */
const ITEMS = {
  plain: { kind: "chat", route: "chat", body: { messages: [{ role: "user", content: "Tell me about tides." }], max_tokens: 6 } },
  logprobs: { kind: "chat", route: "chat", body: { messages: [{ role: "user", content: "Name a river." }], max_tokens: 6, logprobs: true, top_logprobs: 3 } },
  tools: {
    kind: "tools",
    route: "chat",
    body: { messages: [{ role: "user", content: "What is the weather in Paris?" }], tools: [{ type: "function", function: { name: "get_weather", parameters: WEATHER } }], tool_choice: "required", max_tokens: 40, temperature: 1 },
  },
  stream: { kind: "chat", route: "chat", body: { messages: [{ role: "user", content: "Say hello." }], max_tokens: 6, stream: true } },
} as const;
type Item = keyof typeof ITEMS;
const NAMES = Object.keys(ITEMS) as Item[];

let gw: GatewayProcess;
let dir: string;
beforeAll(async () => {
  const tiny = makeTinyCatalog([{ alias: "qwen3-4b", seed: 1 }]);
  dir = join(tiny.dir, "seen");
  const corpus = join(tiny.dir, "corpus.jsonl");
  writeFileSync(corpus, NAMES.map((id) => JSON.stringify({ id, ...ITEMS[id] })).join("\n"));
  const audit = ["--audit-models", `qwen3-4b=${tiny.files["qwen3-4b"]!.path}`, "--audit-corpus", corpus, "--audit-rate", "1", "--audit-delay", "10ms"];
  gw = await startGateway({ tiny, args: audit, agentArgs: ["--test-fault", `record=${dir}`] });
});
afterAll(async () => {
  await gw?.stop();
  gw?.tiny.cleanup();
});

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const itemOf = (plaintext: Record<string, unknown>): Item => {
  const text = (plaintext.messages as { content: string }[])[0]!.content;
  const found = NAMES.find((name) => text === ITEMS[name].body.messages[0].content);
  if (found === undefined) throw new Error(`a session of no corpus item: ${text}`);
  return found;
};
const readSeen = (): Seen[] => readdirSync(dir).map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")) as Seen);
/** The plaintext without its fresh values: what must be byte for byte the same. */
const fixedPart = (plaintext: Record<string, unknown>) => canonicalJson(Object.fromEntries(Object.entries(plaintext).filter(([k]) => !(FRESH as readonly string[]).includes(k))));

/** A caller's session and an audit's, of each item. */
const pairs = new Map<Item, { caller: Seen; audit: Seen }>();
/** Every audit's cache owner. */
const auditOwners: string[] = [];

describe("§4 An audit as the provider sees it", () => {
  beforeAll(async () => {
    const callerShas = new Set<string>();
    const callers = new Map<Item, Seen>();
    const audits = new Map<Item, Seen>();
    // each caller session draws one audit of an item chosen at random: send rounds until every item has had one
    for (let round = 0; round < 12 && audits.size < NAMES.length; round++) {
      for (const name of NAMES) {
        const res = await post(gw, "/v1/chat/completions", { model: "qwen3-4b", ...ITEMS[name].body });
        const text = await res.text();
        expect(res.status, text).toBe(200);
        // the receipt names the sealed bytes' hash: so the test tells the caller's sessions from the audits'
        callerShas.add(/"request_sha256":"([0-9a-f]{64})"/.exec(text)![1]!);
      }
      const sessions = callerShas.size * 2;
      for (const until = Date.now() + 120_000; readSeen().length < sessions && Date.now() < until; ) await new Promise((r) => setTimeout(r, 100));
      for (const seen of readSeen()) {
        const item = itemOf(JSON.parse(seen.plaintext) as Record<string, unknown>);
        (callerShas.has(sha256(seen.plaintext)) ? callers : audits).set(item, seen);
      }
    }
    for (const seen of readSeen()) if (!callerShas.has(sha256(seen.plaintext))) auditOwners.push((JSON.parse(seen.plaintext) as { cache_owner: string }).cache_owner);
    for (const name of NAMES) if (callers.has(name) && audits.has(name)) pairs.set(name, { caller: callers.get(name)!, audit: audits.get(name)! });
    expect([...pairs.keys()].sort()).toEqual([...NAMES].sort());
  }, 300_000);

  it("audits come under several cache owners, as callers' keys do, not the auditor's one (design §4 point 2: 16 identities)", () => {
    // at least 4 audits, each under one of 16 identities at random: all under one is 16^-3 at most
    expect(auditOwners.length).toBeGreaterThanOrEqual(NAMES.length);
    expect(new Set(auditOwners).size).toBeGreaterThan(1);
  });

  describe.each(NAMES)("%s", (name) => {
    it("(a) the plaintexts have the same keys, and the same values on every key but the fresh ones, which have the same formats", () => {
      const { caller, audit } = pairs.get(name)!;
      const [c, a] = [caller, audit].map((s) => JSON.parse(s.plaintext) as Record<string, unknown>);
      expect(Object.keys(a!).sort()).toEqual(Object.keys(c!).sort());
      expect(fixedPart(a!)).toBe(fixedPart(c!));
      for (const p of [a!, c!]) {
        expect(p.nonce).toMatch(/^[0-9a-f]{32}$/);
        expect(p.cache_scope).toMatch(/^[0-9a-f]{64}$/);
        expect(p.cache_owner).toMatch(/^[0-9a-f]{64}$/);
        expect(p.client_nonce).toBeNull();
        expect(Number.isInteger(p.seed) && (p.seed as number) >= 0 && (p.seed as number) < 2 ** 32).toBe(true);
      }
      // fresh: never one request's value again
      for (const key of ["nonce", "seed"] as const) expect(a![key]).not.toEqual(c![key]);
    });

    it("(b) the session messages have the same keys and whole; the sealed lengths differ only by the fresh values' lengths", () => {
      const { caller, audit } = pairs.get(name)!;
      expect(audit.keys).toEqual(caller.keys);
      expect(audit.clear.whole).toBe(caller.clear.whole);
      expect(audit.clear.alias).toBe(caller.clear.alias);
      expect(audit.clear.enc.length).toBe(caller.clear.enc.length);
      // the ciphertext is the plaintext and a fixed overhead: base64 of (plaintext bytes + tag)
      const overhead = (s: Seen) => s.clear.ct.length - Math.ceil((Buffer.byteLength(s.plaintext) + 16) / 3) * 4;
      expect(overhead(audit)).toBe(0);
      expect(overhead(caller)).toBe(0);
      // and the plaintexts' lengths differ by exactly the fresh values' (a seed of fewer digits, say)
      const [c, a] = [caller, audit].map((s) => JSON.parse(s.plaintext) as Record<string, unknown>);
      const freshDiff = FRESH.reduce((sum, k) => sum + JSON.stringify(a![k]).length - JSON.stringify(c![k]).length, 0);
      expect(Buffer.byteLength(audit.plaintext) - Buffer.byteLength(caller.plaintext)).toBe(freshDiff);
    });
  });
});
