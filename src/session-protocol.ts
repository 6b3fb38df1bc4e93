// What travels inside a sealed session (DESIGN §5): the canonical request the gateway seals to the provider,
// and the frames the provider seals back. Only the two ends ever see these in the clear.
import { z } from "zod";
import { Hex16 } from "./hex.ts";
import { CLIENT_NONCE_PATTERN } from "./receipt.ts";
import { SamplingSchema } from "./sampling.ts";

/** One chat turn as the model sees it: the gateway normalises OpenAI messages into this once, at parsing. */
export const ChatMessageSchema = z.strictObject({ role: z.enum(["system", "user", "assistant"]), content: z.string() });
export type ChatMessage = z.infer<typeof ChatMessageSchema>;

/** RFC 8785 JSON of this object is the exact plaintext the gateway seals to the provider (`src/seal.ts`). */
export const SessionPlaintextSchema = z.strictObject({
  model: z.string(),
  messages: z.array(ChatMessageSchema),
  max_tokens: z.number().int().positive(),
  temperature: z.number().min(0).max(2),
  /** stop, top_p, seed, penalties, logit_bias…: each only when the caller set it (`src/sampling.ts`). */
  ...SamplingSchema.shape,
  /** The gateway's fresh nonce, echoed in the receipt so it is bound to this one request. */
  nonce: Hex16,
  /** The caller's `x-svc-receipt-nonce` (null without one), signed into the receipt as `client_nonce`. */
  client_nonce: z.string().regex(CLIENT_NONCE_PATTERN).nullable(),
});
export type SessionPlaintext = z.infer<typeof SessionPlaintextSchema>;

/** Errors a provider may report for a request; anything else it says is a `provider_error`. */
export const PROVIDER_ERROR_CODES = ["provider_error", "context_length_exceeded", "invalid_value"] as const;

export const SessionFrameSchema = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("delta"), text: z.string() }),
  // the receipt carries finish_reason and usage; its shape is the verifier's to judge (a bad one is
  // `receipt_invalid`, not a broken frame)
  z.strictObject({ type: z.literal("done"), receipt: z.unknown() }),
  z.strictObject({ type: z.literal("error"), code: z.string(), message: z.string().max(2000), param: z.string().nullable() }),
]);
export type SessionFrame = z.infer<typeof SessionFrameSchema>;
