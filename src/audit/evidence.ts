// The evidence an audit of a provider's weights leaves (issue 43 item 4; AUDIT-DESIGN §5): the request bytes, the
// answer as relayed and the provider's signed receipt over both, the auditor's reference logprobs, the statistic and
// the verdict, signed by the auditor's Ed25519 key over "svc-audit/v1\0" || JCS(all but the signature). The proof is
// the provider's own signature: anyone holding the pinned GGUF re-derives the verdict without trusting the auditor,
// whose key only says who audited. Portable (zod and src/receipt), so a browser can read it as the verifier does.
import * as z from "zod";
import { base64ToBytes, bytesToBase64 } from "../receipt/base64.ts";
import { AnswerPieceSchema, AnswerRecord, type AnswerPiece } from "../receipt/answer-record.ts";
import { canonicalJson } from "../receipt/canonical-json.ts";
import { Hex32, Hex64 } from "../receipt/hex.ts";
import type { TokenLogprob } from "../receipt/logprobs.ts";
import { RECEIPT_VERSION_LOGPROBS, ReceiptSchema, verifyReceipt, type ReceiptCheck, type ReceiptSigner } from "../receipt/receipt.ts";
import { TRUST_LEVELS } from "../receipt/rungs.ts";
import { sha256Hex } from "../receipt/sha256.ts";
import { SIGNATURE_DOMAINS, verifySignature } from "../receipt/signature.ts";
import { parseStrictJson } from "../receipt/strict-json.ts";
import { ReferencePositionSchema, type ReferencePosition } from "./position.ts";
import { MAX_JOB_TOKENS, MAX_REQUEST_BASE64, RescoreEngineSchema } from "./rescore-job.ts";
import { auditStatistic, GREEDY_GAP, type AuditStatistic } from "./statistic.ts";
import { AUDIT_FAIL_MEAN, auditVerdict, greedyReason, greedyRequest, type SamplingFields } from "./thresholds.ts";

export const EVIDENCE_VERSION = 1;
/**
 * The statistic's definition: a file names the one its figures were computed by. /2 counts a greedy violation only past
 * GREEDY_GAP (0.04 nats, recorded as greedy_gap) and fails on one; a /1 file (gap 1e-3, violations never failing) is
 * refused as not this version, since re-deriving it would need the old rules kept beside the new.
 */
export const AUDIT_STATISTIC_VERSION = "audit-stat/2";
/** The largest evidence file read: the largest request, a whole answer's logprobs at 20 alternatives, its reference. */
export const MAX_EVIDENCE_CHARS = 128 * 1024 * 1024;
/** Pieces one answer is relayed in: at most one text and one logprobs piece a token, and the calls'. */
const MAX_PIECES = 4 * MAX_JOB_TOKENS;

export const VERDICTS = ["pass", "fail", "mismatch"] as const;
export type EvidenceVerdict = (typeof VERDICTS)[number];

const count = z.number().int().min(0);

const AuditEngineSchema = RescoreEngineSchema.extend({
  threads: z.number().int().min(1).max(256),
  batch_size: z.number().int().min(1).max(8192),
});
export type AuditEngine = z.infer<typeof AuditEngineSchema>;

const StatisticSchema = z.strictObject({
  version: z.literal(AUDIT_STATISTIC_VERSION),
  n: count,
  mean: z.number(),
  p95: z.number(),
  max: z.number(),
  bias: z.number(),
  mean_listed: z.number(),
  greedy_violations: count,
  /** The threshold the verdict was given by (src/audit/thresholds.ts). */
  fail_mean: z.number(),
  /** How far the reference's most likely token must lead the provider's for a greedy violation (statistic.ts GREEDY_GAP). */
  greedy_gap: z.number(),
});
export type EvidenceStatistic = z.infer<typeof StatisticSchema>;

const BodySchema = z.strictObject({
  svc_audit: z.literal(EVIDENCE_VERSION),
  id: z.string().min(1).max(64),
  /** Unix seconds. */
  created: count,
  auditor: z.strictObject({ key: Hex32, build: z.string().min(1).max(64), engine: AuditEngineSchema }),
  provider: z.strictObject({
    id: Hex32,
    trust_level: z.enum(TRUST_LEVELS),
    serial: z.string().min(1).max(256).optional(),
    enrollment: z.string().min(1).max(256).optional(),
  }),
  /** The catalog pins of the alias audited: the GGUF anyone re-checking needs. */
  model: z.strictObject({ alias: z.string().min(1).max(128), hub_id: z.string().min(1).max(256), revision: z.string().min(1).max(128), sha256: Hex32 }),
  /** The session plaintext exactly as sealed, base64: the bytes the receipt's request_sha256 covers. */
  request: z.string().max(MAX_REQUEST_BASE64),
  /** The answer as the gateway relayed it, its logprobs pieces included. */
  answer: z.array(AnswerPieceSchema).max(MAX_PIECES),
  receipt: ReceiptSchema,
  reference: z.strictObject({
    /** The prompt's length as the reference rendered it: another than the receipt's is a mismatch, not a fail. */
    prompt_tokens: count,
    positions: z.array(ReferencePositionSchema).max(MAX_JOB_TOKENS),
  }),
  statistic: StatisticSchema,
  verdict: z.enum(VERDICTS),
  reason: z.string().max(2000),
});
export type EvidenceBody = z.infer<typeof BodySchema>;

export const AuditEvidenceSchema = BodySchema.extend({ signature: Hex64 });
export type AuditEvidence = z.infer<typeof AuditEvidenceSchema>;

export interface EvidenceInput {
  id: string;
  created: number;
  auditor: { build: string; engine: AuditEngine };
  provider: EvidenceBody["provider"];
  model: EvidenceBody["model"];
  request: Uint8Array;
  answer: readonly AnswerPiece[];
  receipt: EvidenceBody["receipt"];
  reference: { prompt_tokens: number; positions: readonly ReferencePosition[] };
}

/** The statistic as the file keeps it. */
export function evidenceStatistic(statistic: AuditStatistic): EvidenceStatistic {
  const { n, mean, p95, max, bias, meanListed, greedyViolations } = statistic;
  return { version: AUDIT_STATISTIC_VERSION, n, mean, p95, max, bias, mean_listed: meanListed, greedy_violations: greedyViolations, fail_mean: AUDIT_FAIL_MEAN, greedy_gap: GREEDY_GAP };
}

/**
 * The verdict and its reason: `mismatch` when the reference renders another prompt length than the receipt counts (a
 * rendering disagreement, such as another release's template, never charged to the provider), else the statistic's.
 */
export function judge(statistic: EvidenceStatistic, referencePromptTokens: number, receiptPromptTokens: number, greedy: boolean): { verdict: EvidenceVerdict; reason: string } {
  if (referencePromptTokens !== receiptPromptTokens) {
    return { verdict: "mismatch", reason: `the reference renders the prompt as ${referencePromptTokens} tokens, the receipt counts ${receiptPromptTokens}` };
  }
  const violations = greedy ? statistic.greedy_violations : 0;
  // one audit's evidence stands alone: a suspect is no fail by itself (the auditor's sequential rule is over many)
  const verdict = auditVerdict(statistic, violations) === "fail" ? "fail" : "pass";
  if (verdict === "fail" && statistic.mean <= AUDIT_FAIL_MEAN) return { verdict, reason: greedyReason(violations, statistic.n) };
  const relation = verdict === "fail" ? "above" : "within";
  return { verdict, reason: `mean |claimed - reference| logprob ${statistic.mean} nats over ${statistic.n} tokens, ${relation} the threshold ${statistic.fail_mean}` };
}

/** Whether the sealed request bytes ask for a greedy answer (thresholds.ts `greedyRequest`); false when they read as no request. */
export function requestIsGreedy(request: Uint8Array): boolean {
  try {
    const json = parseStrictJson(new TextDecoder("utf-8", { fatal: true }).decode(request));
    return typeof json === "object" && json !== null && typeof (json as { temperature?: unknown }).temperature === "number" && greedyRequest(json as SamplingFields);
  } catch {
    return false;
  }
}

/** The provider's every token's entry, in order, from the answer as relayed. */
export function answerRecord(answer: readonly AnswerPiece[]): AnswerRecord {
  const record = new AnswerRecord();
  for (const piece of answer) record.add(piece);
  return record;
}

/** Builds and signs the evidence; throws when the reference does not cover the answer's tokens one for one. */
export function buildEvidence(input: EvidenceInput, signer: ReceiptSigner): AuditEvidence {
  const entries = answerRecord(input.answer).logprobs;
  const statistic = evidenceStatistic(auditStatistic(entries, input.reference.positions));
  const body: EvidenceBody = {
    svc_audit: EVIDENCE_VERSION,
    id: input.id,
    created: input.created,
    auditor: { key: signer.publicKey, ...input.auditor },
    provider: input.provider,
    model: input.model,
    request: bytesToBase64(input.request),
    answer: [...input.answer],
    receipt: input.receipt,
    reference: { prompt_tokens: input.reference.prompt_tokens, positions: [...input.reference.positions] },
    statistic,
    ...judge(statistic, input.reference.prompt_tokens, input.receipt.usage.prompt_tokens, requestIsGreedy(input.request)),
  };
  return { ...body, signature: signer.sign(SIGNATURE_DOMAINS.audit, body) };
}

/** Why a text is not an evidence file. */
export class EvidenceFormatError extends Error {}

/** Reads an evidence file's text: I-JSON within MAX_EVIDENCE_CHARS, then the schema, strictly; throws EvidenceFormatError. */
export function parseEvidence(text: string): AuditEvidence {
  if (text.length > MAX_EVIDENCE_CHARS) throw new EvidenceFormatError(`more than ${MAX_EVIDENCE_CHARS} characters`);
  let json: unknown;
  try {
    json = parseStrictJson(text);
  } catch (err) {
    throw new EvidenceFormatError(`not JSON: ${(err as Error).message}`);
  }
  const parsed = AuditEvidenceSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new EvidenceFormatError(`not audit evidence: ${issue.path.length > 0 ? `${issue.path.join(".")}: ` : ""}${issue.message}`);
  }
  return parsed.data;
}

export interface EvidenceCheck {
  checks: ReceiptCheck[];
  problems: string[];
  /** The request bytes the receipt covers (empty when `request` is not base64). */
  request: Uint8Array;
  /** The provider's entries, in order: the tokens a re-check scores. */
  entries: TokenLogprob[];
}

/**
 * Everything in the file that holds without a model: the auditor's signature (and key, when one is expected), the
 * provider's receipt over these request bytes and this answer with its logprobs, the reference covering each token,
 * and the statistic and verdict as this code computes them from the two. Re-running the reference pass is the
 * caller's (agent/verify/audit.ts). Never throws on a parsed file.
 */
export function checkEvidence(evidence: AuditEvidence, expect: { auditorKey?: string } = {}): EvidenceCheck {
  const checks: ReceiptCheck[] = [];
  const add = (check: string, ok: boolean, good: string, bad: string) => checks.push({ check, ok, detail: ok ? good : bad });
  const { signature, ...body } = evidence;
  add("auditor_signature", verifySignature(evidence.auditor.key, SIGNATURE_DOMAINS.audit, body, signature),
    `the auditor's Ed25519 signature by ${evidence.auditor.key} verifies`, `the auditor's signature does not verify under ${evidence.auditor.key}`);
  if (expect.auditorKey !== undefined) {
    add("auditor_key", evidence.auditor.key === expect.auditorKey, `the auditor's key is ${expect.auditorKey}`, `the auditor's key is ${evidence.auditor.key}, expected ${expect.auditorKey}`);
  }
  const request = base64ToBytes(evidence.request);
  add("request", request !== undefined, "request is base64", "request is not base64");
  let record: AnswerRecord | undefined;
  try {
    record = answerRecord(evidence.answer);
  } catch (err) {
    add("answer", false, "", `the answer's pieces do not assemble: ${(err as Error).message}`);
  }
  const entries = record?.logprobs ?? [];
  add("receipt_version", evidence.receipt.version === RECEIPT_VERSION_LOGPROBS, "the receipt is v4: it commits to every token's logprobs", `a v${evidence.receipt.version} receipt commits to no logprobs`);
  if (record !== undefined && request !== undefined) {
    // the provider's own key over these request bytes, this answer and these logprobs, for this model
    const receipt = verifyReceipt(evidence.receipt, {
      providerId: evidence.provider.id,
      trustLevel: evidence.provider.trust_level,
      ...(evidence.provider.serial === undefined ? {} : { serial: evidence.provider.serial }),
      model: evidence.model,
      requestSha256: sha256Hex(request),
      content: record.content,
      toolCalls: record.toolCalls,
      reasoning: record.reasoning,
      logprobs: record.logprobs,
      contentLogprobs: record.contentLogprobs,
    });
    checks.push(...receipt.checks.map((c) => ({ ...c, detail: `receipt: ${c.detail}` })));
  }
  const { positions } = evidence.reference;
  const covers = positions.length === entries.length && positions.every((p, t) => p.id === entries[t]!.id);
  add("reference", covers, `the reference covers the answer's ${entries.length} tokens, one for one`, `the reference's ${positions.length} positions do not cover the answer's ${entries.length} tokens one for one`);
  if (covers) {
    const statistic = evidenceStatistic(auditStatistic(entries, positions));
    add("statistic", canonicalJson(statistic) === canonicalJson(evidence.statistic), "the statistic is what the answer and the reference give", `the statistic is not what the answer and the reference give (${canonicalJson(statistic)})`);
    const { verdict, reason } = judge(statistic, evidence.reference.prompt_tokens, evidence.receipt.usage.prompt_tokens, request !== undefined && requestIsGreedy(request));
    add("verdict", verdict === evidence.verdict && reason === evidence.reason, `the verdict ${verdict} follows from them`, `the verdict is ${evidence.verdict}, but they give ${verdict} (${reason})`);
  }
  return { checks, problems: checks.filter((c) => !c.ok).map((c) => c.detail), request: request ?? new Uint8Array(), entries };
}

/** The SHA-256 of the file's canonical form: how a known-keys file and a listing name one piece of evidence. */
export function evidenceSha256(evidence: AuditEvidence): string {
  return sha256Hex(canonicalJson(evidence));
}
