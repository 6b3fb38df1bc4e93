// What travels inside a sealed session (DESIGN §5): the canonical request the gateway seals to the provider,
// and the frames the provider seals back. Only the two ends ever see these in the clear.
import { z } from "zod";
import { Hex16 } from "./hex.ts";
import { TRUST_LEVELS } from "./trust.ts";

/** RFC 8785 JSON of this object is the exact plaintext sealed to the provider. */
export const SealedRequestSchema = z.strictObject({
  model: z.string(),
  messages: z.array(z.strictObject({ role: z.enum(["system", "user", "assistant"]), content: z.string() })),
  max_tokens: z.number().int().positive(),
  temperature: z.number().min(0).max(2),
  /** The gateway's fresh nonce, echoed in the receipt so it is bound to this one request. */
  nonce: Hex16,
});
export type SealedRequest = z.infer<typeof SealedRequestSchema>;

const UsageSchema = z.strictObject({
  prompt_tokens: z.number().int().nonnegative(),
  completion_tokens: z.number().int().nonnegative(),
  total_tokens: z.number().int().nonnegative(),
});

/** Errors a provider may report for a request; anything else it says is a `provider_error`. */
export const PROVIDER_ERROR_CODES = ["provider_error", "context_length_exceeded"] as const;

export const SessionFrameSchema = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("delta"), text: z.string() }),
  z.strictObject({
    type: z.literal("done"),
    finish_reason: z.enum(["stop", "length"]),
    usage: UsageSchema,
    receipt: z.looseObject({ trust_level: z.enum(TRUST_LEVELS), model_id: z.string(), provider_id: z.string() }),
  }),
  z.strictObject({ type: z.literal("error"), code: z.string(), message: z.string().max(2000), param: z.string().nullable() }),
]);
export type SessionFrame = z.infer<typeof SessionFrameSchema>;
