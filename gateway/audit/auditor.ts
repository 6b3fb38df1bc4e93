// The auditor (issue 43 item 2, design §4–§5): after ordinary placements on a provider (scheduler.ts), it sends one
// of the operator's corpus prompts as OpenAI body bytes through the ordinary path (session-for.ts), pinned to that
// provider, and hands the sealed request and the provider's answer tokens to the reference pass (rescore-worker.ts).
// The provider's signed logprobs against the reference's give the statistic and verdict (src/audit); a fail bars
// the provider at once, and so does a third suspect among its last ten audits. An audit that cannot be judged (an
// error, the provider gone, no rescorer) has no verdict and is never charged; a prompt the rescorer renders to another
// length is a mismatch, logged and not charged.
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import { answerHashesProblem, type RescoreJob, type RescoreResult } from "../../src/audit/rescore-job.ts";
import { auditStatistic } from "../../src/audit/statistic.ts";
import { AUDIT_FAIL_MEAN, auditVerdict, greedyReason, greedyRequest, SUSPECT_WINDOW, SUSPECTS_TO_FAIL, type AuditVerdict } from "../../src/audit/thresholds.ts";
import type { RouteKind } from "../../src/openai/route-kinds.ts";
import type { Principal } from "../keys/auth.ts";
import type { RouteRequest } from "../../src/openai/route-request.ts";
import type { AnswerPiece, AnswerRecord } from "../../src/receipt/answer-record.ts";
import { canonicalJson } from "../../src/receipt/canonical-json.ts";
import { RECEIPT_VERSION_LOGPROBS, type Receipt } from "../../src/receipt/receipt.ts";
import type { CorpusItem } from "./corpus.ts";
import type { AuditRecords } from "./records.ts";
import { RecentVerdicts } from "./recent-verdicts.ts";
import type { AuditScheduler, Dice } from "./scheduler.ts";

/** The reference pass's batch: fixed, and recorded in each job, so anyone re-running it reads the same logits. */
export const AUDIT_BATCH_SIZE = 512;

/** One audit's session, run to its verified receipt. */
export interface AuditSession {
  /** The provider that took it (the pin's). */
  provider: string | undefined;
  /** The auditor's identity it was sent under (identities.ts): retired when the audit fails and its evidence is out. */
  principal: Principal;
  request: RouteRequest;
  receipt: Receipt;
  answer: AnswerRecord;
  /** The answer's pieces as relayed, logprobs included: what a failure's evidence holds. */
  pieces: AnswerPiece[];
}

/** An audit judged pass or fail, with what its record and a failure's evidence are made of (keep-audit.ts). */
export interface JudgedAudit {
  id: string;
  provider: string;
  alias: string;
  verdict: AuditVerdict;
  /** When it was concluded, ms. */
  at: number;
  session: AuditSession;
  /** The bytes the reference scored: the sealed plaintext, which the receipt's request_sha256 covers. */
  request: Uint8Array;
  result: Extract<RescoreResult, { ok: true }>;
}

/** Sends an audit's body bytes through the ordinary path, pinned; throws as a caller's request would fail. */
export type SendAudit = (kind: Exclude<RouteKind, "embeddings">, bytes: Uint8Array, pin: string, headers?: Record<string, string>) => Promise<AuditSession>;

export interface AuditorParts {
  send: SendAudit;
  score: (job: RescoreJob) => Promise<RescoreResult>;
  /** Takes the provider out of rotation for the failed audit. */
  bar: (provider: string, auditId: string) => void;
  /** Revokes and replaces the identity a failed audit went under: its evidence shows that identity's cache owner. */
  retire: (principal: Principal) => Promise<void>;
  /** Keeps a judged audit (the store's row, a failure's signed evidence); the kept evidence's digest, if any. */
  keep?: (audit: JudgedAudit) => Promise<{ evidenceSha256: string | null }>;
  records: AuditRecords;
  scheduler: AuditScheduler;
  corpus: readonly CorpusItem[];
  /** Draws an audit's item in the shape of callers' traffic, with its headers (traffic-shape.ts); without it, an item as the corpus holds it. */
  draft?: () => { item: CorpusItem; headers: Record<string, string> };
  /** The aliases the auditor holds a reference copy of (`--audit-models`). */
  aliases: ReadonlySet<string>;
  threads: number;
  dice: Dice;
  log: Logger;
}

export type AuditResult =
  | { verdict: AuditVerdict; id: string; mean: number; why?: string; judged?: Pick<JudgedAudit, "session" | "request" | "result"> }
  | { verdict: "mismatch" | "no verdict"; id: string; why: string };

export class Auditor {
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Each provider's last verdicts, for the sequential rule. */
  private readonly recent = new RecentVerdicts();
  private closed = false;

  constructor(private readonly parts: AuditorParts) {}

  /** An ordinary session was placed on `provider` for `alias`: maybe audit it, after the scheduler's delay. */
  placed(provider: string, alias: string): void {
    if (this.closed || !this.parts.aliases.has(alias)) return;
    const delay = this.parts.scheduler.placed(provider);
    if (delay === undefined) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void this.audit(provider, alias);
    }, delay);
    timer.unref();
    this.timers.add(timer);
  }

  /** Audits `provider` on `alias` now, with a corpus prompt drawn at random; never throws. */
  async audit(provider: string, alias: string): Promise<AuditResult> {
    const id = `aud_${randomBytes(12).toString("hex")}`;
    const { corpus, dice, log } = this.parts;
    const { item, headers } = this.parts.draft?.() ?? { item: corpus[Math.floor(dice.random() * corpus.length)]!, headers: {} };
    const result = await this.judge(id, provider, alias, item, headers).catch((err: unknown): AuditResult => ({ id, verdict: "no verdict", why: (err as Error).message }));
    if ("mean" in result) {
      const at = dice.now();
      if (result.verdict === "fail") this.parts.bar(provider, id);
      if (result.verdict === "fail" && result.judged) await this.retire(id, result.judged.session.principal);
      const kept = result.judged && (await this.keep({ id, provider, alias, verdict: result.verdict, at, ...result.judged }));
      this.parts.records.note(provider, id, result.verdict, Math.floor(at / 1000), kept?.evidenceSha256);
      log.info({ provider, alias, audit: id, item: item.id, verdict: result.verdict, mean: result.mean, why: result.why }, `audit ${id} of provider ${provider}: ${result.verdict}${result.why === undefined ? "" : ` (${result.why})`}`);
    } else {
      this.parts.records.noVerdict++;
      log.warn({ provider, alias, audit: id, item: item.id, verdict: result.verdict, why: result.why }, `audit ${id} of provider ${provider}: ${result.verdict} (${result.why})`);
    }
    return result;
  }

  /** A failed audit's identity out of the pool; a store away leaves it to its lifetime, and says so. */
  private async retire(id: string, principal: Principal): Promise<void> {
    try {
      await this.parts.retire(principal);
    } catch (err) {
      this.parts.log.error({ audit: id, key: principal.keyId, err: (err as Error).message }, `audit ${id}: its identity ${principal.keyId} could not be retired`);
    }
  }

  /** The store's row and a failure's evidence; a store away leaves the bar and the count here, and says so. */
  private async keep(audit: JudgedAudit): Promise<{ evidenceSha256: string | null } | undefined> {
    try {
      return await this.parts.keep?.(audit);
    } catch (err) {
      this.parts.log.error({ audit: audit.id, provider: audit.provider, err: (err as Error).message }, `audit ${audit.id} could not be kept`);
      return undefined;
    }
  }

  private async judge(id: string, provider: string, alias: string, item: CorpusItem, headers: Record<string, string>): Promise<AuditResult> {
    const bytes = Buffer.from(JSON.stringify({ ...item.body, model: alias }));
    const session = await this.parts.send(item.route, bytes, provider, headers);
    const none = (why: string): AuditResult => ({ id, verdict: "no verdict", why });
    if (session.provider !== provider) return none(`provider ${session.provider ?? "none"} took the audit, not the pinned one`);
    const { receipt, answer, request } = session;
    // the gateway checked the v4 receipt against every entry before it answered; without them there is nothing to judge
    if (receipt.version !== RECEIPT_VERSION_LOGPROBS || request.kind === "embeddings") return none("the answer carries no logprobs (was the gateway run with --audit?)");
    const entries = answer.logprobs;
    const sealed = Buffer.from(canonicalJson(request.body));
    const result = await this.parts.score({
      id,
      alias,
      request_b64: sealed.toString("base64"),
      tokens: entries.map((e) => e.id),
      settings: { threads: this.parts.threads, batch_size: AUDIT_BATCH_SIZE },
      // replay the tokens through the answer path: the ids scored must be the ones that made the answer signed for
      answer: { finish_reason: receipt.finish_reason, call_ids: answer.toolCalls.map((call) => call.id) },
    });
    if (!result.ok) return none(`the rescorer: ${result.error}`);
    if (result.prompt_tokens !== receipt.usage.prompt_tokens) {
      return { id, verdict: "mismatch", why: `the reference renders ${result.prompt_tokens} prompt tokens, the receipt counts ${receipt.usage.prompt_tokens}` };
    }
    if (result.answer === undefined) return none("the rescorer did not replay the answer's tokens");
    const statistic = auditStatistic(entries, result.positions);
    const { mean } = statistic;
    const judged = { session, request: sealed, result };
    const made = answerHashesProblem(result.answer, receipt, entries.length);
    if (made !== undefined) return { id, verdict: this.recent.add(provider, "fail"), mean, why: `the tokens scored are not the tokens that made the answer: ${made}`, judged };
    // a greedy answer's every token is the argmax: one that is not was not drawn from the pinned model (S2)
    const violations = greedyRequest(request.body) ? statistic.greedyViolations : 0;
    const verdict = auditVerdict(statistic, violations);
    const ruled = this.recent.add(provider, verdict);
    const why =
      ruled !== verdict ? `${SUSPECTS_TO_FAIL} suspect audits among the provider's last ${SUSPECT_WINDOW}`
      : verdict === "fail" && mean <= AUDIT_FAIL_MEAN ? greedyReason(violations, statistic.n)
      : undefined;
    return { id, verdict: ruled, mean, ...(why === undefined ? {} : { why }), judged };
  }

  close(): void {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }
}
