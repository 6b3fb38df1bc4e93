// Design §4–§5, the auditor on fakes of its edges: what it sends (a corpus body any caller could send, pinned), what
// it asks the reference pass (the sealed bytes and the provider's tokens), and what each outcome does: a pass is
// counted, a fail is counted and bars the provider, and a mismatch or an audit without a verdict charges no one.
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Auditor, type AuditorParts, type AuditSession, type SendAudit } from "../../../../gateway/audit/auditor.ts";
import { auditKeeper } from "../../../../gateway/audit/keep-audit.ts";
import type { NewAudit } from "../../../../gateway/keys/audit-store.ts";
import { Signer } from "../../../../src/crypto/signing.ts";
import type { CorpusItem } from "../../../../gateway/audit/corpus.ts";
import { AuditRecords } from "../../../../gateway/audit/records.ts";
import { AuditScheduler, type Dice } from "../../../../gateway/audit/scheduler.ts";
import type { Principal } from "../../../../gateway/keys/auth.ts";
import { answerHashes, type AnswerHashes, type RescoreJob, type RescoreResult } from "../../../../src/audit/rescore-job.ts";
import { parseRoute } from "../../../../src/openai/route-request.ts";
import { AUDIT_FAIL_MEAN, AUDIT_SUSPECT_MEAN } from "../../../../src/audit/thresholds.ts";
import { AnswerRecord, type AnswerPiece } from "../../../../src/receipt/answer-record.ts";
import { canonicalJson } from "../../../../src/receipt/canonical-json.ts";
import { tokenString, type TokenLogprob } from "../../../../src/receipt/logprobs.ts";
import type { Receipt } from "../../../../src/receipt/receipt.ts";
import { CATALOG, NONCE } from "../../../fixtures/chat-request.ts";

const P = "ab".repeat(32);
const ITEM: CorpusItem = { id: "c1", kind: "chat", route: "chat", body: { messages: [{ role: "user", content: "Tell me about tides." }], max_tokens: 3 } };
const entry = (id: number, logprob: number): TokenLogprob => ({ id, token: tokenString([65 + id]), bytes: [65 + id], logprob, top_logprobs: [] });
const ENTRIES = [entry(1, -0.5), entry(2, -1.25), entry(3, -2)];

interface Fakes {
  sent: { kind: string; bytes: Uint8Array; pin: string }[];
  jobs: RescoreJob[];
  bars: [string, string][];
  /** The identities retired, by key id; each audit is sent under its own, key_0, key_1, … */
  retired: string[];
}

/** The answer the fake provider sends, and the hashes its receipt signs for it. */
function answerOf(): AnswerRecord {
  const answer = new AnswerRecord();
  for (const e of ENTRIES) {
    answer.add({ type: "logprobs", logprobs: [e] });
    answer.add({ type: "delta", text: e.token });
  }
  return answer;
}
const SIGNED = answerHashes(answerOf(), ENTRIES.length);

function auditor(options: { shift?: number; promptTokens?: number; provider?: string; sendError?: Error; scoreError?: string; retireError?: Error; replay?: AnswerHashes | null; rival?: number; item?: CorpusItem; dice?: Dice; scheduler?: AuditScheduler; keep?: AuditorParts["keep"] } = {}) {
  const fakes: Fakes = { sent: [], jobs: [], bars: [], retired: [] };
  const send: SendAudit = async (kind, bytes, pin) => {
    const principal = { kind: "user" as const, keyId: `key_${fakes.sent.length}`, userId: 1 };
    fakes.sent.push({ kind, bytes, pin });
    if (options.sendError) throw options.sendError;
    const request = parseRoute(kind, JSON.parse(Buffer.from(bytes).toString("utf8")), { catalog: CATALOG, nonce: NONCE, complete: { seed: 5 } });
    const pieces = ENTRIES.flatMap((e): AnswerPiece[] => [{ type: "logprobs", logprobs: [e] }, { type: "delta", text: e.token }]);
    const answer = new AnswerRecord();
    for (const piece of pieces) answer.add(piece);
    const { response_sha256, reasoning_sha256, tool_calls_sha256 } = SIGNED;
    const receipt = { version: 4, finish_reason: "length", response_sha256, reasoning_sha256, tool_calls_sha256, usage: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 } } as unknown as Receipt;
    return { provider: options.provider ?? pin, principal, request, receipt, answer, pieces } satisfies AuditSession;
  };
  const score = async (job: RescoreJob): Promise<RescoreResult> => {
    fakes.jobs.push(job);
    if (options.scoreError) return { id: job.id, ok: false, error: options.scoreError };
    const positions = job.tokens.map((id, i) => {
      const ref = ENTRIES[i]!.logprob - (options.shift ?? 1e-5);
      // `rival`: another token the reference finds this much more likely than the provider's
      const top: [number, number][] = options.rival === undefined ? [[id, ref]] : [[99, ref + options.rival], [id, ref]];
      return { id, ref, top };
    });
    // what the tokens make on the answer path: by default the answer the receipt signs
    const answer = options.replay === undefined ? SIGNED : options.replay;
    const engine = { node_llama_cpp: "3.0.0", llama_cpp: "b1", backend: "cpu" as const, chunk: 16 };
    return { id: job.id, ok: true, prompt_tokens: options.promptTokens ?? 11, positions, ms: 1, engine, ...(answer === null ? {} : { answer }) };
  };
  const records = new AuditRecords();
  const dice = options.dice ?? { now: () => 1_795_305_600_000, random: () => 0.5 };
  const retire = async (principal: Principal) => {
    if (options.retireError) throw options.retireError;
    fakes.retired.push(principal.keyId);
  };
  const a = new Auditor({ send, score, bar: (id, audit) => void fakes.bars.push([id, audit]), retire, records, scheduler: options.scheduler ?? new AuditScheduler(undefined, dice), ...(options.keep === undefined ? {} : { keep: options.keep }), corpus: [options.item ?? ITEM], aliases: new Set(["qwen3-4b"]), threads: 2, dice, log: pino({ level: "silent" }) });
  return { a, fakes, records };
}

describe("§4 What an audit sends", () => {
  it("the corpus body with the alias as model, pinned apart, through the route the item names; the job holds the sealed bytes and the provider's tokens", async () => {
    const { a, fakes } = auditor();
    await a.audit(P, "qwen3-4b");
    expect(fakes.sent).toHaveLength(1);
    const { kind, bytes, pin } = fakes.sent[0]!;
    const body = JSON.parse(Buffer.from(bytes).toString("utf8"));
    expect([kind, pin, body]).toEqual(["chat", P, { ...ITEM.body, model: "qwen3-4b" }]);
    // a body any caller could send: it passes the route's parser as it is, and names no pin
    expect(parseRoute("chat", body, { catalog: CATALOG, nonce: NONCE }).pin).toBeUndefined();
    const job = fakes.jobs[0]!;
    const sealed = parseRoute("chat", body, { catalog: CATALOG, nonce: NONCE, complete: { seed: 5 } }).body;
    expect(Buffer.from(job.request_b64, "base64").toString("utf8")).toBe(canonicalJson(sealed));
    expect([job.alias, job.tokens, job.settings]).toEqual(["qwen3-4b", [1, 2, 3], { threads: 2, batch_size: 512 }]);
    // and asks for the tokens' replay through the answer path, with the receipt's finish_reason and the relayed call ids
    expect(job.answer).toEqual({ finish_reason: "length", call_ids: [] });
  });
});

describe("§5 What each outcome does", () => {
  it("an honest answer passes: counted, no bar", async () => {
    const { a, fakes, records } = auditor({ shift: 1e-5 });
    expect((await a.audit(P, "qwen3-4b")).verdict).toBe("pass");
    expect(records.of(P)).toMatchObject({ passed: 1, failed: 0, last: { verdict: "pass", at: 1_795_305_600 } });
    expect([fakes.bars, fakes.retired]).toEqual([[], []]);
  });

  it("logprobs off by a Q4-sized 0.1 nats fail: counted, the provider is barred for that audit, and the identity it went under is retired", async () => {
    const { a, fakes, records } = auditor({ shift: 0.1 });
    const result = await a.audit(P, "qwen3-4b");
    expect(result.verdict).toBe("fail");
    expect(records.of(P)).toMatchObject({ passed: 0, failed: 1, last: { id: result.id, verdict: "fail" } });
    expect(fakes.bars).toEqual([[P, result.id]]);
    // the failure's public evidence shows that identity's cache owner: it is never sent under again
    expect(fakes.retired).toEqual(["key_0"]);
  });

  it("an identity the store cannot retire is logged: the fail, its count and the bar stand", async () => {
    const { a, fakes, records } = auditor({ shift: 0.1, retireError: new Error("the key store is away") });
    const result = await a.audit(P, "qwen3-4b");
    expect(result.verdict).toBe("fail");
    expect(records.of(P)).toMatchObject({ failed: 1 });
    expect([fakes.bars, fakes.retired]).toEqual([[[P, result.id]], []]);
  });

  it("tokens that do not make the answer the receipt signs fail, whatever their logprobs: counted, and the provider is barred", async () => {
    // honest logprobs for tokens that are not the ones that made the answer (the content's hash differs)
    const { a, fakes, records } = auditor({ shift: 1e-5, replay: { ...SIGNED, response_sha256: "cd".repeat(32) } });
    const result = await a.audit(P, "qwen3-4b");
    expect(result).toMatchObject({ verdict: "fail", why: "the tokens scored are not the tokens that made the answer: response_sha256" });
    expect(records.of(P)).toMatchObject({ passed: 0, failed: 1 });
    expect(fakes.bars).toEqual([[P, result.id]]);
  });

  it.each([
    ["a rescorer that does not replay the answer has no verdict", { shift: 0.1, replay: null }, "no verdict"],
    ["a prompt the reference renders to another length is a mismatch", { shift: 0.1, promptTokens: 12 }, "mismatch"],
    ["a session that fails has no verdict", { sendError: new Error("provider_unavailable") }, "no verdict"],
    ["another provider than the pinned one has no verdict", { shift: 0.1, provider: "cd".repeat(32) }, "no verdict"],
    ["a rescorer that fails has no verdict", { scoreError: "the rescorer exited" }, "no verdict"],
  ] as const)("%s: nothing counted, no one charged", async (_name, options, verdict) => {
    const { a, fakes, records } = auditor(options);
    expect((await a.audit(P, "qwen3-4b")).verdict).toBe(verdict);
    expect([records.of(P), records.noVerdict, fakes.bars, fakes.retired]).toEqual([{ passed: 0, failed: 0, suspect: 0, barring: 0, last: null }, 1, [], []]);
  });
});

describe("§2 Verdicts beyond the mean", () => {
  const GREEDY: CorpusItem = { ...ITEM, body: { ...ITEM.body, temperature: 0 } };

  it("a greedy request's answer with a token the reference does not rank first fails, though its logprobs are honest", async () => {
    const { a, fakes } = auditor({ shift: 1e-5, rival: 0.5, item: GREEDY });
    const result = await a.audit(P, "qwen3-4b");
    expect(result).toMatchObject({ verdict: "fail", why: "3 of the greedy answer's 3 tokens are not the reference's most likely" });
    expect(fakes.bars).toEqual([[P, result.id]]);
  });

  it("the same tokens of a sampled request pass: sampling may draw any token", async () => {
    expect((await auditor({ shift: 1e-5, rival: 0.5 }).a.audit(P, "qwen3-4b")).verdict).toBe("pass");
  });

  it("a greedy answer whose rival is within honest noise of its token passes", async () => {
    expect((await auditor({ shift: 1e-5, rival: 0.01, item: GREEDY }).a.audit(P, "qwen3-4b")).verdict).toBe("pass");
  });

  it("a mean between the suspect and fail thresholds is suspect: no bar; the third suspect among a provider's last 10 audits fails and bars it", async () => {
    const { a, fakes, records } = auditor({ shift: (AUDIT_SUSPECT_MEAN + AUDIT_FAIL_MEAN) / 2 });
    const first = await a.audit(P, "qwen3-4b");
    const second = await a.audit(P, "qwen3-4b");
    expect([first.verdict, second.verdict, fakes.bars, fakes.retired]).toEqual(["suspect", "suspect", [], []]);
    // the listing counts suspects apart: they never bar
    expect(records.of(P)).toMatchObject({ passed: 0, failed: 0, suspect: 2, last: { id: second.id, verdict: "suspect" } });
    const third = await a.audit(P, "qwen3-4b");
    expect(third).toMatchObject({ verdict: "fail", why: "3 suspect audits among the provider's last 10" });
    expect(fakes.bars).toEqual([[P, third.id]]);
    // only the failed audit's evidence is published, so only its identity is retired
    expect(fakes.retired).toEqual(["key_2"]);
    expect(records.of(P)).toMatchObject({ passed: 0, failed: 1, suspect: 2, last: { id: third.id, verdict: "fail" } });
  });

  it("a fail by the sequential rule is kept as a row with reason \"sequential\" and no evidence (no one audit proves it), and logs no error", async () => {
    const added: NewAudit[] = [];
    const errors: string[] = [];
    const log = pino({ level: "error" }, { write: (line: string) => void errors.push(line) });
    const store = { add: async (audit: NewAudit) => void added.push(audit), since: async () => [], bars: async () => [], evidence: async () => undefined, clear: async () => undefined };
    const keep = auditKeeper({ store, signer: Signer.fromSeed(Buffer.alloc(32, 7)), catalog: CATALOG, build: "test", threads: 2, subjectOf: (id) => ({ id }), log });
    const { a } = auditor({ shift: (AUDIT_SUSPECT_MEAN + AUDIT_FAIL_MEAN) / 2, keep });
    for (let i = 0; i < 3; i++) await a.audit(P, "qwen3-4b");
    expect(added.map((row) => [row.verdict, row.reason, row.evidenceSha256, row.bars])).toEqual([
      ["suspect", undefined, null, []],
      ["suspect", undefined, null, []],
      ["fail", "sequential", null, [`enrollment:provider:${P}`]],
    ]);
    expect(errors).toEqual([]);
  });

  it("a store write that fails is tried again: the failure's row reaches the store, so the bar is the store's", async () => {
    const added: NewAudit[] = [];
    let refusals = 2;
    const store = {
      add: async (audit: NewAudit) => {
        if (refusals-- > 0) throw new Error("the store is away");
        added.push(audit);
      },
      since: async () => [], bars: async () => [], evidence: async () => undefined, clear: async () => undefined,
    };
    const keep = auditKeeper({ store, signer: Signer.fromSeed(Buffer.alloc(32, 7)), catalog: CATALOG, build: "test", threads: 2, subjectOf: (id) => ({ id }), log: pino({ level: "silent" }), retryMs: 1 });
    const { a } = auditor({ shift: 0.1, keep });
    const result = await a.audit(P, "qwen3-4b");
    expect(added.map((row) => [row.id, row.verdict])).toEqual([[result.id, "fail"]]);
  });
});

describe("§4 After ordinary placements", () => {
  afterEach(() => vi.useRealTimers());

  it("a placement the scheduler draws is audited after its delay; an alias without a reference copy never is", async () => {
    vi.useFakeTimers();
    const dice = { now: () => Date.now(), random: () => 0.5 };
    const { a, fakes } = auditor({ dice, scheduler: new AuditScheduler({ rate: 1, floorMs: 3_600_000, delayMeanMs: 1_000 }, dice) });
    a.placed(P, "qwen3-8b");
    a.placed(P, "qwen3-4b");
    await vi.advanceTimersByTimeAsync(600);
    expect(fakes.sent).toHaveLength(0);
    // -ln(0.5) × 1 s
    await vi.advanceTimersByTimeAsync(200);
    expect(fakes.sent.map((s) => s.pin)).toEqual([P]);
    a.close();
  });
});
