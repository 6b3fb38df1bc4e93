// The line protocol between a gateway's auditor and `svc-agent rescore` (issue 43 item 2): the gateway never imports
// agent/, so the reference pass runs in an agent process that reads one JSON job per line on stdin and writes one
// result per line on stdout. Parsed with zod on both sides: each side treats the other's bytes as a stranger's.
import * as z from "zod";
import { ReferencePositionSchema } from "./position.ts";

export const MAX_JOB_TOKENS = 32_768;
export const MAX_REQUEST_BASE64 = 8 * 1024 * 1024;
/** The longest job line a rescorer reads: the largest request and token list with room to spare; a longer one is refused unread. */
export const MAX_JOB_LINE_BYTES = MAX_REQUEST_BASE64 + 16 * MAX_JOB_TOKENS + 64 * 1024;

export const RescoreJobSchema = z.strictObject({
  /** The auditor's id for this job; the result carries it back. */
  id: z.string().min(1).max(64),
  /** The catalog alias whose pinned GGUF scores the answer (the rescorer holds alias → path, SHA-checked). */
  alias: z.string().min(1).max(128),
  /** The session plaintext exactly as sealed: the bytes the receipt's request_sha256 covers, base64. */
  request_b64: z.string().max(MAX_REQUEST_BASE64),
  /** The provider's answer token ids, in order (from its signed logprob entries). */
  tokens: z.array(z.number().int().min(0)).max(MAX_JOB_TOKENS),
  /** Engine settings of the reference pass, recorded in the evidence so anyone can re-run it alike. */
  settings: z.strictObject({ threads: z.number().int().min(1).max(256), batch_size: z.number().int().min(1).max(8192) }),
});
export type RescoreJob = z.infer<typeof RescoreJobSchema>;


export const RescoreResultSchema = z.discriminatedUnion("ok", [
  z.strictObject({
    id: z.string(),
    ok: z.literal(true),
    /** The prompt's length as the rescorer rendered it: compared with the receipt's usage.prompt_tokens. */
    prompt_tokens: z.number().int().min(0),
    positions: z.array(ReferencePositionSchema).max(MAX_JOB_TOKENS),
    /** Wall time of the reference pass, for the bench's CPU-per-audit figure. */
    ms: z.number().min(0),
  }),
  z.strictObject({
    id: z.string(),
    ok: z.literal(false),
    /** Why the job could not be scored: a verdict of "no verdict", never a provider's fault. */
    error: z.string().max(2000),
  }),
]);
export type RescoreResult = z.infer<typeof RescoreResultSchema>;
