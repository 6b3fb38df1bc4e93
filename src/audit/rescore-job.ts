// The line protocol between a gateway's auditor and `svc-agent rescore` (issue 43 item 2): the gateway never imports
// agent/, so the reference pass runs in an agent process that reads one JSON job per line on stdin and writes one
// result per line on stdout. Parsed with zod on both sides: each side treats the other's bytes as a stranger's.
import * as z from "zod";
import { MAX_CALL_ID_LENGTH, MAX_TOOL_CALLS } from "../receipt/answer-record.ts";
import { Hex32 } from "../receipt/hex.ts";
import { FINISH_REASONS, reasoningSha256, toolCallsSha256, type Receipt } from "../receipt/receipt.ts";
import { sha256Hex } from "../receipt/sha256.ts";
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
  /**
   * Optional: replay the tokens through the agent's answer path too (AUDIT-DESIGN §1 item 2), with the receipt's
   * finish_reason and the relayed answer's tool-call ids (drawn at random, so no token makes them); the result then
   * carries the answer's hashes, for answerHashesProblem against the receipt.
   */
  answer: z.strictObject({ finish_reason: z.enum(FINISH_REASONS), call_ids: z.array(z.string().min(1).max(MAX_CALL_ID_LENGTH)).max(MAX_TOOL_CALLS) }).optional(),
});
export type RescoreJob = z.infer<typeof RescoreJobSchema>;


/** The engine a rescorer scores with: what an audit's evidence records beside the job's settings (evidence.ts). */
export const RescoreEngineSchema = z.strictObject({
  node_llama_cpp: z.string().min(1).max(64),
  llama_cpp: z.string().min(1).max(64),
  /** The reference pass runs on CPU: the same build and settings give the same figures bit for bit. */
  backend: z.literal("cpu"),
  /** Answer positions read per call: fixed, so the pass is deterministic (agent/engine/rescore.ts). */
  chunk: z.number().int().min(1).max(4096),
});
export type RescoreEngine = z.infer<typeof RescoreEngineSchema>;

/** What the provider's tokens make on the agent's answer path: the receipt's answer hashes, and the tokens read. */
export const AnswerHashesSchema = z.strictObject({
  response_sha256: Hex32,
  reasoning_sha256: Hex32.nullable(),
  tool_calls_sha256: Hex32.nullable(),
  /** Fewer than the job's tokens when the answer was complete before its last token. */
  tokens_used: z.number().int().min(0),
});
export type AnswerHashes = z.infer<typeof AnswerHashesSchema>;

/** The hashes of an answer record as a receipt has them. */
export function answerHashes(record: { content: string; reasoning: string | null; toolCalls: readonly unknown[] }, tokensUsed: number): AnswerHashes {
  return { response_sha256: sha256Hex(record.content), reasoning_sha256: reasoningSha256(record.reasoning), tool_calls_sha256: toolCallsSha256(record.toolCalls), tokens_used: tokensUsed };
}

/** Which of the receipt's answer hashes the replayed tokens do not make (and whether tokens follow the answer's end), or undefined. */
export function answerHashesProblem(hashes: AnswerHashes, receipt: Receipt, tokens: number): string | undefined {
  if (receipt.version === 1) return "a v1 receipt covers no reasoning or tool calls";
  const wrong = [
    ...(hashes.tokens_used < tokens ? [`the answer ends after ${hashes.tokens_used} of its ${tokens} tokens`] : []),
    ...(hashes.response_sha256 === receipt.response_sha256 ? [] : ["response_sha256"]),
    ...(hashes.reasoning_sha256 === receipt.reasoning_sha256 ? [] : ["reasoning_sha256"]),
    ...(hashes.tool_calls_sha256 === receipt.tool_calls_sha256 ? [] : ["tool_calls_sha256"]),
  ];
  return wrong.length === 0 ? undefined : wrong.join(", ");
}

export const RescoreResultSchema = z.discriminatedUnion("ok", [
  z.strictObject({
    id: z.string(),
    ok: z.literal(true),
    /** The prompt's length as the rescorer rendered it: compared with the receipt's usage.prompt_tokens. */
    prompt_tokens: z.number().int().min(0),
    positions: z.array(ReferencePositionSchema).max(MAX_JOB_TOKENS),
    /** Wall time of the reference pass, for the bench's CPU-per-audit figure. */
    ms: z.number().min(0),
    /** The engine that scored (optional: a stand-in rescorer may leave it out). */
    engine: RescoreEngineSchema.optional(),
    /** When the job asked for the replay: what its tokens make. */
    answer: AnswerHashesSchema.optional(),
  }),
  z.strictObject({
    id: z.string(),
    ok: z.literal(false),
    /** Why the job could not be scored: a verdict of "no verdict", never a provider's fault. */
    error: z.string().max(2000),
  }),
]);
export type RescoreResult = z.infer<typeof RescoreResultSchema>;
