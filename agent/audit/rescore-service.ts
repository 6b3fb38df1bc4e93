// `svc-agent rescore` (issue 43 items 2 and 4; AUDIT-DESIGN §6): the auditor's reference pass as a process, since the
// gateway never imports agent/. One job a line on stdin, one result a line on stdout (src/audit/rescore-job.ts), one
// job at a time. The request is read as the agent reads a session's plaintext, so the prompt renders as it did for the
// provider. Every job gets a result: one that cannot be scored says why, and the next is read.
import { MAX_JOB_LINE_BYTES, RescoreJobSchema, type RescoreJob, type RescoreResult } from "../../src/audit/rescore-job.ts";
import { ApiError } from "../../src/errors.ts";
import { base64ToBytes } from "../../src/receipt/base64.ts";
import { boundedLines } from "../../src/process/bounded-lines.ts";
import { parseSessionPlaintext } from "../../src/session/sealed-request.ts";
import { describeIssues } from "../../src/validation.ts";
import type { Rescored, RescoreSettings } from "../engine/rescore.ts";
import type { GenerateRequest } from "../engine/turn.ts";
import * as z from "zod";

export interface Scorer {
  /** Throws an Error whose message says why the job could not be scored. */
  score(alias: string, request: GenerateRequest, tokens: readonly number[], settings: RescoreSettings): Promise<Rescored>;
}

export interface RescoreLimits {
  /** The most CPU threads a job may ask for (`--threads`). */
  maxThreads: number;
}

/** Reads jobs until `input` ends, writing each result as it is ready. */
export async function serveRescoreJobs(input: AsyncIterable<Uint8Array | string>, write: (line: string) => Promise<void>, scorer: Scorer, limits: RescoreLimits): Promise<void> {
  for await (const line of boundedLines(input, MAX_JOB_LINE_BYTES)) {
    if ("text" in line && line.text.trim() === "") continue;
    const result = "text" in line ? await runJob(line.text, scorer, limits) : failed("", `a job line of ${line.tooLong} bytes, over the ${MAX_JOB_LINE_BYTES} a rescorer reads`);
    await write(`${JSON.stringify(result)}\n`);
  }
}

/** One job line to its result. */
export async function runJob(text: string, scorer: Scorer, limits: RescoreLimits): Promise<RescoreResult> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return failed("", "a job line that is not JSON");
  }
  const parsed = RescoreJobSchema.safeParse(json);
  if (!parsed.success) return failed(idOf(json), `not a rescore job: ${describeIssues(parsed.error)}`);
  const job = parsed.data;
  if (job.settings.threads > limits.maxThreads) return failed(job.id, `settings.threads is ${job.settings.threads}; this rescorer runs at most ${limits.maxThreads} (--threads)`);
  let request: GenerateRequest;
  try {
    request = jobRequest(job);
  } catch (err) {
    return failed(job.id, `request_b64: ${(err as Error).message}`);
  }
  const started = performance.now();
  try {
    const { promptTokens, positions } = await scorer.score(job.alias, request, job.tokens, { threads: job.settings.threads, batchSize: job.settings.batch_size });
    return { id: job.id, ok: true, prompt_tokens: promptTokens, positions, ms: Math.round((performance.now() - started) * 100) / 100 };
  } catch (err) {
    return failed(job.id, (err as Error).message);
  }
}

/** The request a job's bytes hold, read as the agent reads an opened session (session-channel.ts); throws why not. */
export function jobRequest(job: Pick<RescoreJob, "alias" | "request_b64">): GenerateRequest {
  const bytes = base64ToBytes(job.request_b64);
  if (bytes === undefined) throw new Error("not base64");
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(bytes).toString("utf8"));
  } catch {
    throw new Error("not JSON");
  }
  let request;
  try {
    request = parseSessionPlaintext(json);
  } catch (err) {
    throw new Error(`not a session's request: ${err instanceof z.ZodError ? describeIssues(err) : err instanceof ApiError ? err.message : String(err)}`);
  }
  if (request.input !== undefined) throw new Error("an embeddings session has no answer tokens to re-score");
  if (request.model !== job.alias) throw new Error(`the request is for ${request.model}, the job names ${job.alias}`);
  return request;
}

const failed = (id: string, error: string): RescoreResult => ({ id, ok: false, error: error.slice(0, 2000) });

/** The job's id where a job that fails its schema has a usable one, so the auditor can tell which failed. */
function idOf(json: unknown): string {
  const id = (json as { id?: unknown } | null)?.id;
  return typeof id === "string" && id.length > 0 && id.length <= 64 ? id : "";
}
