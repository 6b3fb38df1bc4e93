// The public attestation record (`GET /v1/providers/{id}/attestation`): the evidence the coordinator verified
// when it last granted a provider its rung, as the agent signed it, so anyone can re-check the rung offline.
import * as z from "zod";
import { EvidenceSchema, type Evidence } from "./attestation.ts";
import { Hex32 } from "../receipt/hex.ts";
import { TRUST_LEVELS, type TrustLevel } from "../receipt/rungs.ts";

export const AttestationRecordSchema = z
  .strictObject({
    object: z.literal("provider.attestation"),
    provider_id: Hex32,
    /** The rung the coordinator granted for this evidence. */
    rung: z.enum(TRUST_LEVELS),
    /** The device serial from the verified chain: at `hardware` only (SPEC §2.4). */
    serial: z.string().optional(),
    /** When the coordinator verified it; the chain's dates are checked as of this instant. */
    verified_at: z.iso.datetime(),
    /** What the agent sent in answer to the challenge `evidence.nonce`, less the chain below hardware. */
    evidence: EvidenceSchema,
    /**
     * Below hardware, a chain the agent presented is left out: its leaf may name the device serial, which
     * only the hardware rung discloses. The signature covers it, so such a record cannot be re-checked.
     */
    chain_withheld: z.literal(true).optional(),
    /**
     * Where the gateway serving the record audits its providers (issue 43): its own record of this provider's audits
     * and whether a failed one took it out of rotation. The gateway's word, outside the signed evidence.
     */
    audits: z
      .strictObject({
        passed: z.int().min(0),
        failed: z.int().min(0),
        /** Absent from an older gateway's record, which a caller still reads (createSealedFetch). */
        suspect: z.int().min(0).optional(),
        /** Failures not cleared by an operator; absent from an older gateway's record. */
        barring: z.int().min(0).optional(),
        last: z.strictObject({ id: z.string(), at: z.int().min(0), verdict: z.enum(["pass", "suspect", "fail"]) }).nullable(),
      })
      .optional(),
    in_rotation: z.boolean().optional(),
    /** Each failure whose evidence the gateway keeps: `url` serves it publicly, `evidence_sha256` names it (as known-keys files do). */
    failures: z.array(z.strictObject({ id: z.string(), at: z.int().min(0), evidence_sha256: Hex32, url: z.string() })).optional(),
  })
  .superRefine((record, ctx) => {
    if (record.rung === "hardware") {
      if (record.chain_withheld) ctx.addIssue({ code: "custom", path: ["chain_withheld"], message: "a hardware record withholds nothing" });
      return;
    }
    // SPEC §2.4's serial rule: neither the serial nor a chain that may carry it below hardware
    if (record.serial !== undefined) ctx.addIssue({ code: "custom", path: ["serial"], message: "a serial is disclosed at the hardware rung only" });
    if (record.evidence.chain !== undefined) ctx.addIssue({ code: "custom", path: ["evidence", "chain"], message: "a chain is disclosed at the hardware rung only" });
  });
export type AttestationRecord = z.infer<typeof AttestationRecordSchema>;

/** The record of evidence that earned `rung` (and `serial`, at hardware) at `verifiedAt`, with the serial rule applied. */
export function attestationRecord(providerId: string, evidence: Evidence, grant: { rung: TrustLevel; serial?: string }, verifiedAt: Date): AttestationRecord {
  const hardware = grant.rung === "hardware";
  const { chain, ...rest } = evidence;
  return {
    object: "provider.attestation",
    provider_id: providerId,
    rung: grant.rung,
    ...(hardware && grant.serial !== undefined ? { serial: grant.serial } : {}),
    verified_at: verifiedAt.toISOString(),
    evidence: hardware ? evidence : rest,
    ...(!hardware && chain !== undefined ? { chain_withheld: true as const } : {}),
  };
}
