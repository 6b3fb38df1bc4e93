// `svc-agent verify --audit FILE --model PATH`: re-checks an audit's evidence (issue 43 item 4; AUDIT-DESIGN §5)
// without trusting the auditor. What holds without a model first (src/audit/evidence.ts: the auditor's signature, the
// provider's receipt over these request bytes and this answer with its logprobs), then the reference pass again on
// your copy of the pinned GGUF with the recorded settings, and the verdict again by the same statistic code.
import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import { answerRecord, checkEvidence, evidenceSha256, evidenceStatistic, judge, MAX_EVIDENCE_CHARS, parseEvidence, requestIsGreedy, type AuditEvidence } from "../../src/audit/evidence.ts";
import { auditStatistic } from "../../src/audit/statistic.ts";
import { sha256File } from "../../src/crypto/sha256-node.ts";
import { decodeSavedBytes } from "../../src/receipt/saved-text.ts";
import { NODE_LLAMA_CPP_VERSION } from "../audit/reference-models.ts";
import { jobRequest } from "../audit/rescore-service.ts";
import { RESCORE_CHUNK, rescore } from "../engine/rescore.ts";
import { replayAnswer } from "../engine/answer/replay.ts";
import { answerHashes, answerHashesProblem } from "../../src/audit/rescore-job.ts";
import { planTurn } from "../engine/turn.ts";
import { readAtMost } from "./command.ts";
import { recordAuditFailure } from "./known-keys.ts";

export interface AuditFlags {
  /** `--model PATH`: your copy of the GGUF the audit names. */
  model: string;
  /** `--auditor-key HEX`: the auditor's key you trust; without it any auditor's signature is shown, not held to one. */
  auditorKey?: string;
  /** `--trust-on-first-use FILE`: a fail that reproduces is recorded there against the provider. */
  trustOnFirstUse?: string;
}

/** `reproduced`: the file holds and its verdict reproduces; `unsound`: it does not; `unchecked`: it could not be checked. */
export type AuditCheckStatus = "reproduced" | "unsound" | "unchecked";
export const AUDIT_EXIT: Record<AuditCheckStatus, number> = { reproduced: 0, unsound: 1, unchecked: 3 };

export interface AuditReport {
  status: AuditCheckStatus;
  evidence?: AuditEvidence;
}

/**
 * Prints one line per check, the figures and a verdict line, and resolves the outcome. A file that is not evidence,
 * or whose checks fail, is `unsound`; one that cannot be read, or a model file that is not the one it names, is
 * `unchecked`.
 */
export async function verifyAuditFile(path: string, flags: AuditFlags, print: (line: string) => void): Promise<AuditReport> {
  const line = (ok: boolean | undefined, detail: string) => print(`  ${ok === undefined ? "--  " : ok ? "ok  " : "FAIL"}  ${detail}`);
  const bytes = await readAtMost(path, MAX_EVIDENCE_CHARS).catch((err: Error) => {
    throw new Error(`cannot read ${path}: ${err.message}`);
  });
  let evidence: AuditEvidence;
  try {
    if (bytes === undefined) throw new Error(`more than ${MAX_EVIDENCE_CHARS} bytes`);
    evidence = parseEvidence(decodeSavedBytes(bytes));
  } catch (err) {
    print(`${path}: not audit evidence`);
    print(`UNSOUND: ${(err as Error).message}`);
    return { status: "unsound" };
  }
  print(`${path}: audit ${evidence.id} of provider ${evidence.provider.id} on ${evidence.model.alias}, verdict ${evidence.verdict}`);
  const sound = checkEvidence(evidence, flags.auditorKey === undefined ? {} : { auditorKey: flags.auditorKey });
  for (const check of sound.checks) line(check.ok, check.detail);
  if (flags.auditorKey === undefined) line(undefined, `the auditor's key ${evidence.auditor.key} is not held to one you trust: pass --auditor-key HEX`);
  if (sound.problems.length > 0) {
    print(`UNSOUND: ${sound.problems.join("; ")}`);
    return { status: "unsound", evidence };
  }

  const sha256 = await sha256File(flags.model).catch((err: Error) => {
    throw new Error(`cannot read --model ${flags.model}: ${err.message}`);
  });
  if (sha256 !== evidence.model.sha256) throw new Error(`--model ${flags.model} has sha256 ${sha256}, but the audit names ${evidence.model.alias} at ${evidence.model.sha256}`);
  line(true, `${flags.model} is ${evidence.model.alias}'s pinned GGUF (sha256 ${sha256})`);

  const { engine } = evidence.auditor;
  if (engine.node_llama_cpp !== NODE_LLAMA_CPP_VERSION) line(undefined, `the auditor ran node-llama-cpp ${engine.node_llama_cpp}, this build ${NODE_LLAMA_CPP_VERSION}: the figures may differ by float rounding, far inside a fail's margin`);
  if (engine.chunk !== RESCORE_CHUNK) line(undefined, `the auditor read ${engine.chunk} positions a call, this build ${RESCORE_CHUNK}: the figures may differ by float rounding, far inside a fail's margin`);
  const request = jobRequest({ alias: evidence.model.alias, request_b64: evidence.request });
  const llama = await getLlama({ gpu: false, logLevel: LlamaLogLevel.error });
  let again;
  let made: string | undefined;
  try {
    const model = await llama.loadModel({ modelPath: flags.model });
    try {
      const ids = sound.entries.map((e) => e.id);
      const { record, used } = replayAnswer(model, planTurn(request), ids, evidence.receipt.finish_reason, answerRecord(evidence.answer).toolCalls.map((c) => c.id));
      made = answerHashesProblem(answerHashes(record, used), evidence.receipt, ids.length);
      again = await rescore(model, request, ids, { threads: engine.threads, batchSize: engine.batch_size });
    } finally {
      await model.dispose();
    }
  } finally {
    await llama.dispose();
  }

  // the tokens scored must be the ones that made the answer the provider signed (AUDIT-DESIGN §1 item 2)
  line(made === undefined, made === undefined ? `the answer's ${sound.entries.length} token ids make its content, reasoning and tool calls on this build's answer path, as the receipt's hashes say` : `the answer's token ids do not make the answer its receipt covers: ${made}`);
  if (made !== undefined) {
    print(`UNSOUND: the answer's token ids do not make the answer its receipt covers (${made})`);
    return { status: "unsound", evidence };
  }
  const stored = evidence.reference.positions;
  const drift = Math.max(0, ...again.positions.map((p, t) => Math.abs(p.ref - stored[t]!.ref)));
  const statistic = evidenceStatistic(auditStatistic(sound.entries, again.positions));
  const { verdict, reason } = judge(statistic, again.promptTokens, evidence.receipt.usage.prompt_tokens, requestIsGreedy(sound.request));
  line(undefined, `re-scored ${statistic.n} tokens after a prompt of ${again.promptTokens} on CPU, ${engine.threads} threads, batch ${engine.batch_size}`);
  line(undefined, `mean |claimed - reference| ${statistic.mean}, p95 ${statistic.p95}, max ${statistic.max}, bias ${statistic.bias}, greedy violations ${statistic.greedy_violations}; threshold ${statistic.fail_mean}`);
  line(undefined, `max |stored - recomputed reference| ${drift}`);
  const reproduced = verdict === evidence.verdict;
  line(reproduced, reproduced ? `the verdict reproduces: ${verdict} (${reason})` : `the file says ${evidence.verdict}, the re-check gives ${verdict} (${reason})`);
  const sha256OfEvidence = evidenceSha256(evidence);
  if (reproduced && verdict === "fail" && flags.trustOnFirstUse !== undefined) {
    // proven by the provider's own signature, so it is recorded whoever the auditor is
    const { receipt } = evidence;
    const failure = { evidence_sha256: sha256OfEvidence, auditor_key: evidence.auditor.key, at: new Date(evidence.created * 1000).toISOString() };
    const added = recordAuditFailure(flags.trustOnFirstUse, { providerId: receipt.provider_id, signingKey: receipt.signing_key, ...(receipt.serial === undefined ? {} : { serial: receipt.serial }) }, failure);
    line(true, `the failed audit ${added ? "is recorded" : "was recorded already"} against provider ${receipt.provider_id} in ${flags.trustOnFirstUse}`);
  }
  print(reproduced ? `REPRODUCED: ${verdict}: audit ${evidence.id} of provider ${evidence.provider.id} (evidence sha256 ${sha256OfEvidence})` : `NOT REPRODUCED: the file says ${evidence.verdict}, the re-check gives ${verdict}`);
  return { status: reproduced ? "reproduced" : "unsound", evidence };
}

