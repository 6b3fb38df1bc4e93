// `svc-agent verify --attestation FILE`: re-checks a saved attestation record (`GET /v1/providers/{id}/attestation`)
// offline with the one check of evidence coordinators and gateways run (src/trust/attestation.ts), against the release keys and roots you trust,
// and says which rung the evidence proves; a rung whose anchors you did not give is "not checked", never valid.
import { readFile } from "node:fs/promises";
import type { X509Certificate } from "@peculiar/x509";
import { checkEvidence } from "../../src/trust/attestation.ts";
import { AttestationRecordSchema, type AttestationRecord } from "../../src/trust/attestation-record.ts";
import { loadReleaseKeys, loadRoots } from "../../src/trust/anchor-files.ts";
import { providerIdOf } from "../../src/receipt/provider-id.ts";
import { atOrAbove, type TrustLevel } from "../../src/receipt/rungs.ts";

export interface AttestationFlags {
  /** `--roots DIR`: the attestation roots you trust (`.pem`/`.crt`), for the hardware rung. */
  roots?: string;
  /** `--release-keys FILE`: the release keys you trust, for the transparent rung. */
  releaseKeys?: string;
}

/** `unchecked`: the file holds what it should, but a rung it claims needs an anchor that was not given. */
export type AttestationStatus = "valid" | "invalid" | "unchecked";
export const ATTESTATION_EXIT: Record<AttestationStatus, number> = { valid: 0, invalid: 1, unchecked: 3 };

interface Anchors {
  releaseKeys?: Set<string>;
  roots?: X509Certificate[];
}

interface Line {
  state: "ok" | "FAIL" | "--";
  detail: string;
  /** A check that could not run for want of an anchor. */
  skipped?: boolean;
}

/**
 * Prints one line per check and a verdict line, and resolves the verdict. A file that is not a record is
 * `invalid`; a file or anchor that cannot be read throws, which the command line turns into exit 3.
 */
export async function verifyAttestationFile(path: string, flags: AttestationFlags, print: (line: string) => void): Promise<AttestationStatus> {
  const text = await readFile(path, "utf8").catch((err: Error) => {
    throw new Error(`cannot read ${path}: ${err.message}`);
  });
  const anchors: Anchors = {
    ...(flags.releaseKeys === undefined ? {} : { releaseKeys: loadReleaseKeys(flags.releaseKeys) }),
    ...(flags.roots === undefined ? {} : { roots: loadRoots(flags.roots) }),
  };
  const record = parseRecord(text);
  if (typeof record === "string") {
    print(`${path}: not an attestation record`);
    print(`INVALID: ${record}`);
    return "invalid";
  }
  print(`${path}: attestation of provider ${record.provider_id}, granted ${record.rung} at ${record.verified_at}`);
  const { lines, proven } = await check(record, anchors);
  for (const line of lines) print(`  ${line.state.padEnd(4)}  ${line.detail}`);
  print(`  --    the nonce's freshness is the coordinator's word: it sent ${record.evidence.nonce} and took one answer to it`);
  const { status, verdict } = judge(record, lines, proven);
  print(verdict);
  return status;
}

function parseRecord(text: string): AttestationRecord | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return "the file is not JSON";
  }
  const parsed = AttestationRecordSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  return `${issue?.path.join(".") || "the record"}: ${issue?.message ?? "invalid"}`;
}

/** Every check the record allows, from the one check of evidence (src/trust/attestation.ts), and the rung it proves under these anchors. */
async function check(record: AttestationRecord, anchors: Anchors): Promise<{ lines: Line[]; proven?: TrustLevel }> {
  const { evidence } = record;
  const lines: Line[] = [];
  lines.push(
    providerIdOf(evidence.signing_key) === record.provider_id
      ? { state: "ok", detail: `provider_id: the SHA-256 of signing key ${evidence.signing_key}` }
      : { state: "FAIL", detail: `provider_id: ${record.provider_id} is not the SHA-256 of signing key ${evidence.signing_key}` },
  );
  if (record.chain_withheld) {
    const detail = "signature: not checked: it covers the certificate chain the provider presented, which a record below hardware withholds (its leaf may name the device serial)";
    lines.push({ state: "--", detail, skipped: true });
    return { lines };
  }

  // as of the instant it was checked: a leaf that has expired since proved what it proved then
  const verdict = await checkEvidence(evidence, { releaseKeys: anchors.releaseKeys ?? new Set(), roots: anchors.roots ?? [] }, new Date(record.verified_at));
  const { signature, transparent, hardware } = verdict.checks;
  lines.push(
    signature.ok
      ? { state: "ok", detail: `signature: Ed25519 by the signing key over nonce ${evidence.nonce}, both public keys (sealing ${evidence.sealing_key}) and the rest of the evidence` }
      : { state: "FAIL", detail: `signature: ${signature.reason}` },
  );

  if (transparent.presented) {
    if (anchors.releaseKeys === undefined) {
      const signer = evidence.manifest ? ` (the manifest is signed by release key ${evidence.manifest.release_key})` : "";
      lines.push({ state: "--", detail: `transparent: not checked: pass --release-keys FILE, the release keys you trust${signer}`, skipped: true });
    } else {
      lines.push(
        transparent.ok
          ? { state: "ok", detail: `transparent: code measurement ${evidence.measurement} is listed in a release manifest signed by trusted release key ${evidence.manifest?.release_key}` }
          : { state: "FAIL", detail: `transparent: ${transparent.reason}` },
      );
    }
  }

  if (hardware.presented) {
    if (anchors.roots === undefined) {
      lines.push({ state: "--", detail: "hardware: not checked: pass --roots DIR, the attestation roots you trust", skipped: true });
    } else if (!hardware.ok) lines.push({ state: "FAIL", detail: `hardware: ${hardware.reason}` });
    else {
      lines.push({ state: "ok", detail: `hardware: ${evidence.chain!.length} certificates lead to a trusted root, as of ${record.verified_at}, and the leaf binds both public keys` });
      lines.push(
        record.serial === hardware.serial
          ? { state: "ok", detail: `serial: ${hardware.serial}, as the leaf names it` }
          : { state: "FAIL", detail: `serial: the record says ${record.serial ?? "none"}, the leaf names ${hardware.serial}` },
      );
    }
  }
  return { lines, ...(verdict.ok ? { proven: verdict.rung } : {}) };
}

function judge(record: AttestationRecord, lines: Line[], proven: TrustLevel | undefined): { status: AttestationStatus; verdict: string } {
  const failures = lines.filter((l) => l.state === "FAIL").map((l) => l.detail);
  if (failures.length > 0) return { status: "invalid", verdict: `INVALID: ${failures.join("; ")}` };
  if (proven === undefined) {
    return { status: "unchecked", verdict: `NOT CHECKED: the record withholds the chain its signature covers, so its ${record.rung} rung cannot be re-checked` };
  }
  if (atOrAbove(proven, record.rung)) {
    const serial = proven === "hardware" ? ` (serial ${record.serial})` : "";
    const granted = proven === record.rung ? "" : `, above the ${record.rung} rung the coordinator granted`;
    return { status: "valid", verdict: `VALID: provider ${record.provider_id} proves rung ${proven}${serial}${granted}` };
  }
  if (lines.some((l) => l.skipped)) {
    return { status: "unchecked", verdict: `NOT CHECKED: the record claims rung ${record.rung}; what could be checked proves ${proven} (see the -- lines)` };
  }
  return { status: "invalid", verdict: `INVALID: the record claims rung ${record.rung} but its evidence proves only ${proven}` };
}
