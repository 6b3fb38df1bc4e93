// An audit's evidence file (issue 43 item 4; AUDIT-DESIGN §5, src/audit/evidence.ts): built and signed by the auditor,
// read strictly, and checked without a model: the auditor's signature over every field, the provider's receipt over
// the request bytes, the answer and its logprobs, and the statistic and verdict recomputed from the answer and the
// reference by the same code.
import { describe, expect, it } from "vitest";
import { answerRecord, buildEvidence, checkEvidence, evidenceSha256, parseEvidence, requestIsGreedy, type AuditEvidence, type EvidenceInput } from "../../../../src/audit/evidence.ts";
import type { ReferencePosition } from "../../../../src/audit/position.ts";
import { AUDIT_FAIL_MEAN } from "../../../../src/audit/thresholds.ts";
import { Signer } from "../../../../src/crypto/signing.ts";
import type { AnswerPiece } from "../../../../src/receipt/answer-record.ts";
import { canonicalJson } from "../../../../src/receipt/canonical-json.ts";
import { logprobsSha256, type TokenLogprob } from "../../../../src/receipt/logprobs.ts";
import { providerIdOf } from "../../../../src/receipt/provider-id.ts";
import { reasoningSha256, signReceipt, toolCallsSha256, type Receipt } from "../../../../src/receipt/receipt.ts";
import { sha256Hex } from "../../../../src/receipt/sha256.ts";
import { SIGNATURE_DOMAINS, verifySignature } from "../../../../src/receipt/signature.ts";

const provider = Signer.fromSeed(new Uint8Array(32).fill(0x21));
const auditor = Signer.fromSeed(new Uint8Array(32).fill(0x42));
const model = { alias: "qwen3-4b", hub_id: "svc-test/tiny-qwen3-4b-GGUF", revision: "1".padStart(40, "0"), sha256: "ab".repeat(32) };
const request = new TextEncoder().encode(canonicalJson({ model: "qwen3-4b", messages: [{ role: "user", content: "Hi" }], temperature: 0.9, top_logprobs: 2, client_nonce: null, nonce: "0f".repeat(16) }));

const entry = (id: number, logprob: number): TokenLogprob => ({
  id,
  token: String.fromCharCode(97 + (id % 26)),
  bytes: [97 + (id % 26)],
  logprob,
  top_logprobs: [{ id, token: String.fromCharCode(97 + (id % 26)), bytes: [97 + (id % 26)], logprob }],
});
const ENTRIES = [entry(3, -0.5), entry(7, -1.25), entry(11, -0.125), entry(5, -2.5)];
const ANSWER: AnswerPiece[] = [
  { type: "logprobs", logprobs: ENTRIES.slice(0, 2) },
  { type: "delta", text: "dh" },
  { type: "logprobs", logprobs: ENTRIES.slice(2) },
  { type: "delta", text: "lf" },
];

/** The provider's v4 receipt over the request and this answer, as an agent signs it. */
function receiptFor(answer: readonly AnswerPiece[], promptTokens = 9, bytes = request): Receipt {
  const record = answerRecord(answer);
  return signReceipt(provider, {
    version: 4,
    id: "rcpt_000000000000000000000001",
    created: 1_795_305_600,
    provider_id: providerIdOf(provider.publicKey),
    trust_level: "process",
    model_id: model.alias,
    model_hub_id: model.hub_id,
    model_revision: model.revision,
    model_sha256: model.sha256,
    request_sha256: sha256Hex(bytes),
    response_sha256: sha256Hex(record.content),
    usage: { prompt_tokens: promptTokens, completion_tokens: record.logprobs.length, total_tokens: promptTokens + record.logprobs.length },
    finish_reason: "stop",
    tool_calls_sha256: toolCallsSha256(record.toolCalls),
    reasoning_sha256: reasoningSha256(record.reasoning),
    cached_tokens: 0,
    gateway_nonce: "0f".repeat(16),
    client_nonce: null,
    logprobs_sha256: logprobsSha256(record.logprobs),
    content_logprobs_sha256: logprobsSha256(record.contentLogprobs),
  });
}

/** The reference the auditor's pass gives: each token's value shifted by `shift` nats. */
const referenceOf = (entries: readonly TokenLogprob[], shift = 1e-6): ReferencePosition[] =>
  entries.map((e) => ({ id: e.id, ref: e.logprob + shift, top: [[e.id, e.logprob + shift]] }));

const input = (overrides: Partial<EvidenceInput> = {}): EvidenceInput => ({
  id: "aud_0123456789abcdef01234567",
  created: 1_795_305_700,
  auditor: { build: "0.1.0", engine: { node_llama_cpp: "3.21.1", llama_cpp: "b6000", backend: "cpu", threads: 2, batch_size: 512, chunk: 16 } },
  provider: { id: providerIdOf(provider.publicKey), trust_level: "process" },
  model,
  request,
  answer: ANSWER,
  receipt: receiptFor(ANSWER),
  reference: { prompt_tokens: 9, positions: referenceOf(ENTRIES) },
  ...overrides,
});

const roundTrip = (evidence: AuditEvidence) => parseEvidence(JSON.stringify(evidence, null, 2));
const failed = (evidence: AuditEvidence) => checkEvidence(evidence).checks.filter((c) => !c.ok).map((c) => c.check);

/** Every leaf of a JSON value, by its path. */
function leaves(value: unknown, path: (string | number)[] = []): (string | number)[][] {
  if (value === null || typeof value !== "object") return [path];
  return Object.entries(value).flatMap(([k, v]) => leaves(v, [...path, Array.isArray(value) ? Number(k) : k]));
}

/** A copy of `evidence` with the leaf at `path` changed (to a value of the same type). */
function changed(evidence: AuditEvidence, path: (string | number)[]): unknown {
  const copy = structuredClone(evidence) as unknown as Record<string | number, unknown>;
  const parent = path.slice(0, -1).reduce<Record<string | number, unknown>>((at, key) => at[key] as Record<string | number, unknown>, copy);
  const key = path.at(-1)!;
  const value = parent[key];
  parent[key] = typeof value === "number" ? value + 1 : typeof value === "boolean" ? !value : value === null ? "x" : `${String(value).slice(0, -1)}${String(value).endsWith("0") ? "1" : "0"}`;
  return copy;
}

describe("buildEvidence and parseEvidence: the file round-trips", () => {
  it("built, written and read back, every check holds and the verdict is the statistic's", () => {
    const evidence = buildEvidence(input(), auditor);
    const read = roundTrip(evidence);
    expect(read).toEqual(evidence);
    expect(evidenceSha256(read)).toBe(evidenceSha256(evidence));
    expect(read.auditor.key).toBe(auditor.publicKey);
    expect(read.statistic).toMatchObject({ version: "audit-stat/2", n: 4, greedy_violations: 0, fail_mean: AUDIT_FAIL_MEAN, greedy_gap: 0.04 });
    expect(read.verdict).toBe("pass");
    const check = checkEvidence(read, { auditorKey: auditor.publicKey });
    expect(check.problems).toEqual([]);
    expect(check.checks.map((c) => c.check)).toEqual(expect.arrayContaining(["auditor_signature", "auditor_key", "signature", "request_sha256", "logprobs_sha256", "reference", "statistic", "verdict"]));
    expect(check.entries.map((e) => e.id)).toEqual([3, 7, 11, 5]);
    expect(check.request).toEqual(request);
  });

  it("the verdict: fail above the threshold, mismatch when the reference renders another prompt length", () => {
    const fail = buildEvidence(input({ reference: { prompt_tokens: 9, positions: referenceOf(ENTRIES, 0.05) } }), auditor);
    expect([fail.verdict, fail.reason]).toEqual(["fail", `mean |claimed - reference| logprob ${fail.statistic.mean} nats over 4 tokens, above the threshold ${AUDIT_FAIL_MEAN}`]);
    expect(checkEvidence(fail).problems).toEqual([]);
    const mismatch = buildEvidence(input({ reference: { prompt_tokens: 10, positions: referenceOf(ENTRIES, 0.05) } }), auditor);
    expect([mismatch.verdict, mismatch.reason]).toEqual(["mismatch", "the reference renders the prompt as 10 tokens, the receipt counts 9"]);
  });

  it("a greedy request's answer whose tokens the reference does not rank first fails on that alone, and the check agrees", () => {
    const greedy = new TextEncoder().encode(canonicalJson({ model: "qwen3-4b", messages: [{ role: "user", content: "Hi" }], temperature: 0, top_logprobs: 2, client_nonce: null, nonce: "0f".repeat(16) }));
    // honest logprobs, but another token ranked 0.5 nats above each of the provider's
    const positions = referenceOf(ENTRIES).map((p) => ({ ...p, top: [[99, p.ref + 0.5], ...p.top] as [number, number][] }));
    const fail = buildEvidence(input({ request: greedy, receipt: receiptFor(ANSWER, 9, greedy), reference: { prompt_tokens: 9, positions } }), auditor);
    expect([fail.verdict, fail.reason]).toEqual(["fail", "4 of the greedy answer's 4 tokens are not the reference's most likely"]);
    expect(checkEvidence(fail).problems).toEqual([]);
    // the same tokens of a sampled request pass
    expect(buildEvidence(input({ reference: { prompt_tokens: 9, positions } }), auditor).verdict).toBe("pass");
    expect([requestIsGreedy(greedy), requestIsGreedy(request), requestIsGreedy(new TextEncoder().encode("[0]")), requestIsGreedy(new Uint8Array([0xff]))]).toEqual([true, false, false, false]);
  });

  it("a reference that does not cover the answer's tokens one for one is not built", () => {
    expect(() => buildEvidence(input({ reference: { prompt_tokens: 9, positions: referenceOf(ENTRIES.slice(1)) } }), auditor)).toThrow("4 logprob entries against 3 reference positions");
  });
});

describe("checkEvidence: the auditor's signature covers every field", () => {
  const evidence = buildEvidence(input({ provider: { id: providerIdOf(provider.publicKey), trust_level: "process", enrollment: "enr_1" } }), auditor);
  const { signature: _, ...body } = evidence;

  it("any one field changed breaks it", () => {
    expect(failed(evidence)).toEqual([]);
    const paths = leaves(body);
    expect(paths.length).toBeGreaterThan(60);
    // the signature alone, as checkEvidence checks it: the rest of its checks would slow this loop down
    const unbroken = paths.filter((path) => {
      const { signature, ...changedBody } = changed(evidence, path) as AuditEvidence;
      return verifySignature(changedBody.auditor.key, SIGNATURE_DOMAINS.audit, changedBody, signature);
    });
    expect(unbroken).toEqual([]);
  });

  it("a field added or removed breaks it, and so does another auditor's key in the file", () => {
    expect(failed({ ...evidence, reason: `${evidence.reason}.` })).toContain("auditor_signature");
    const { enrollment: _e, ...provider_ } = evidence.provider;
    expect(failed({ ...evidence, provider: provider_ })).toContain("auditor_signature");
    expect(failed({ ...evidence, auditor: { ...evidence.auditor, key: provider.publicKey } })).toContain("auditor_signature");
    expect(checkEvidence(evidence, { auditorKey: provider.publicKey }).problems).toEqual([`the auditor's key is ${auditor.publicKey}, expected ${provider.publicKey}`]);
  });
});

describe("checkEvidence: what an auditor who signs a lie cannot make hold", () => {
  /** The auditor's own signature over a body it changed: only the checks that do not rest on it can catch the lie. */
  const resigned = (body: Omit<AuditEvidence, "signature">): AuditEvidence => ({ ...body, signature: auditor.sign(SIGNATURE_DOMAINS.audit, body) });
  const honest = buildEvidence(input(), auditor);
  const { signature: _, ...body } = honest;

  it("a logprob it made up is not the provider's: the receipt's hashes fail", () => {
    const answer = structuredClone(ANSWER);
    (answer[0] as Extract<AnswerPiece, { type: "logprobs" }>).logprobs[0]!.logprob = -3;
    expect(failed(resigned({ ...body, answer }))).toEqual(expect.arrayContaining(["logprobs_sha256", "content_logprobs_sha256", "statistic"]));
  });

  it("a verdict or statistic the figures do not give fails; so do other request bytes and a reference that skips a token", () => {
    expect(failed(resigned({ ...body, verdict: "fail" }))).toEqual(["verdict"]);
    expect(failed(resigned({ ...body, statistic: { ...body.statistic, mean: 1 } }))).toEqual(["statistic"]);
    expect(failed(resigned({ ...body, request: btoa("{}") }))).toEqual(["request_sha256"]);
    expect(failed(resigned({ ...body, request: "not base64!" }))).toEqual(["request"]);
    expect(failed(resigned({ ...body, reference: { ...body.reference, positions: body.reference.positions.slice(1) } }))).toEqual(["reference"]);
  });

  it("a receipt older than v4 commits to no logprobs", () => {
    const { logprobs_sha256: _l, content_logprobs_sha256: _c, ...v3 } = body.receipt as Extract<Receipt, { version: 4 }>;
    const receipt = signReceipt(provider, { ...v3, version: 3 } as never);
    expect(failed(resigned({ ...body, receipt }))).toContain("receipt_version");
  });
});

describe("parseEvidence: strict and bounded", () => {
  const text = JSON.stringify(buildEvidence(input(), auditor));

  it("an unknown field, a missing one, a duplicate key and a text past the bound are refused, naming why", () => {
    expect(() => parseEvidence(text.replace('{"svc_audit":1,', '{"svc_audit":1,"extra":true,'))).toThrow(/^not audit evidence: Unrecognized key: "extra"/);
    expect(() => parseEvidence(text.replace(/"reason":"[^"]*",/, ""))).toThrow(/^not audit evidence: reason: /);
    expect(() => parseEvidence(text.replace('{"svc_audit":1,', '{"svc_audit":1,"svc_audit":1,'))).toThrow(/^not JSON: /);
    expect(() => parseEvidence(text.replace('"svc_audit":1', '"svc_audit":2'))).toThrow(/^not audit evidence: svc_audit: /);
    // a statistic of the first definition (greedy gap 1e-3, violations never failing) is not re-derived by these rules
    expect(() => parseEvidence(text.replace('"version":"audit-stat/2"', '"version":"audit-stat/1"'))).toThrow(/^not audit evidence: statistic\.version: /);
    expect(() => parseEvidence(" ".repeat(128 * 1024 * 1024 + 1))).toThrow(`more than ${128 * 1024 * 1024} characters`);
  });
});
