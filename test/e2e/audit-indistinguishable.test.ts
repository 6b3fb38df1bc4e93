// Issue 43 item 2, design §4 "The test": what a provider sees of an audit is what it sees of a caller's request. An
// agent run with the test fault `record=DIR` writes, for every session, the session message's clear fields, when it
// came and the plaintext it opened to. A caller sends corpus item X's body over HTTP plain, with logprobs and
// streamed, and T's (a tool call); the auditor (rate 1: every ordinary session draws an audit) sends X or T in a
// shape drawn from those callers sent (gateway/audit/traffic-shape.ts). Each audit is set beside the caller's
// session of the same case, and the two must differ only in the values that are fresh for every request.
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
/** The corpus: X, a chat prompt, and T, one with a tool. The auditor sends them in the shapes callers sent lately
 * (gateway/audit/traffic-shape.ts), so X goes plain, with logprobs or streamed as a caller's X did. */
const X = { messages: [{ role: "user", content: "Tell me about tides." }], max_tokens: 6 };
const T = { messages: [{ role: "user", content: "What is the weather in Paris?" }], tools: [{ type: "function", function: { name: "get_weather", parameters: WEATHER } }], tool_choice: "required", max_tokens: 40, temperature: 1 };
const CORPUS = [
  { id: "X", kind: "chat", route: "chat", body: X },
  { id: "T", kind: "tools", route: "chat", body: T },
];
/** What the caller sends: each shape the audit can take. */
const CASES = {
  plain: X,
  logprobs: { ...X, logprobs: true, top_logprobs: 3 },
  tools: T,
  stream: { ...X, stream: true },
} as const;
type Case = keyof typeof CASES;
const NAMES = Object.keys(CASES) as Case[];

let gw: GatewayProcess;
let dir: string;
beforeAll(async () => {
  const tiny = makeTinyCatalog([{ alias: "qwen3-4b", seed: 1 }]);
  dir = join(tiny.dir, "seen");
  const corpus = join(tiny.dir, "corpus.jsonl");
  writeFileSync(corpus, CORPUS.map((item) => JSON.stringify(item)).join("\n"));
  const audit = ["--audit-models", `qwen3-4b=${tiny.files["qwen3-4b"]!.path}`, "--audit-corpus", corpus, "--audit-rate", "1", "--audit-delay", "10ms"];
  gw = await startGateway({ tiny, args: audit, agentArgs: ["--test-fault", `record=${dir}`] });
});
afterAll(async () => {
  await gw?.stop();
  gw?.tiny.cleanup();
});

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
/** Which case an audit's session is, by what the provider sees of it: its tools, logprobs and whole. */
const caseOf = (seen: Seen): Case => {
  const plaintext = JSON.parse(seen.plaintext) as Record<string, unknown>;
  if (plaintext.tools !== undefined) return "tools";
  if (plaintext.top_logprobs === 3) return "logprobs";
  return seen.clear.whole === true ? "plain" : "stream";
};
const readSeen = (): Seen[] => readdirSync(dir).filter((f) => f.endsWith(".json")).map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")) as Seen);
/** The plaintext without its fresh values: what must be byte for byte the same. */
const fixedPart = (plaintext: Record<string, unknown>) => canonicalJson(Object.fromEntries(Object.entries(plaintext).filter(([k]) => !(FRESH as readonly string[]).includes(k))));

/** A caller's session and an audit's, of each item. */
const pairs = new Map<Case, { caller: Seen; audit: Seen }>();
/** Every audit's cache owner. */
const auditOwners: string[] = [];

describe("§4 An audit as the provider sees it", () => {
  beforeAll(async () => {
    const callerCases = new Map<string, Case>();
    const callers = new Map<Case, Seen>();
    const audits = new Map<Case, Seen>();
    // each caller session draws one audit, in a shape drawn from those sent: send rounds until every case has had one
    for (let round = 0; round < 12 && audits.size < NAMES.length; round++) {
      for (const name of NAMES) {
        const res = await post(gw, "/v1/chat/completions", { model: "qwen3-4b", ...CASES[name] });
        const text = await res.text();
        expect(res.status, text).toBe(200);
        // the receipt names the sealed bytes' hash: so the test tells the caller's sessions from the audits'
        callerCases.set(/"request_sha256":"([0-9a-f]{64})"/.exec(text)![1]!, name);
      }
      const sessions = callerCases.size * 2;
      for (const until = Date.now() + 120_000; readSeen().length < sessions && Date.now() < until; ) await new Promise((r) => setTimeout(r, 100));
      for (const seen of readSeen()) {
        const caller = callerCases.get(sha256(seen.plaintext));
        if (caller !== undefined) callers.set(caller, seen);
        else audits.set(caseOf(seen), seen);
      }
    }
    const callerShas = new Set(callerCases.keys());
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
