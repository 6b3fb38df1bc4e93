// `svc-agent verify --trust-on-first-use FILE`: the providers' keys seen before, SSH known_hosts style. First
// sight of a provider records its key (and serial) and passes; a later receipt that contradicts it fails.
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { z } from "zod";
import { Hex32 } from "../../src/receipt/hex.ts";
import type { Receipt, ReceiptCheck } from "../../src/receipt/receipt.ts";
import { describeIssues } from "../../src/validation.ts";

const KnownV1 = z.strictObject({ signing_key: Hex32, serial: z.string().min(1).optional(), first_seen: z.string() });
/** A failed audit of the provider, reproduced here by `verify --audit` (issue 43 item 4): its evidence's SHA-256 names it. */
const AuditFailure = z.strictObject({ evidence_sha256: Hex32, auditor_key: Hex32, at: z.string() });
export type AuditFailure = z.infer<typeof AuditFailure>;
const Known = KnownV1.extend({ audit_failures: z.array(AuditFailure).max(1000).optional() });
/** Version 2 adds audit_failures; a version 1 file still reads, and is written back as version 2. */
const KnownKeysFile = z.discriminatedUnion("version", [
  z.strictObject({ version: z.literal(1), providers: z.record(Hex32, KnownV1) }),
  z.strictObject({ version: z.literal(2), providers: z.record(Hex32, Known) }),
]);
type KnownKeysFile = { version: 2; providers: Record<string, z.infer<typeof Known>> };

/** Throws an Error naming the file when it exists but is not ours; a missing file is an empty one. */
function load(path: string): KnownKeysFile {
  if (!existsSync(path)) return { version: 2, providers: {} };
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw new Error(`${path}: not a known-keys file (${(err as Error).message})`);
  }
  const parsed = KnownKeysFile.safeParse(json);
  if (!parsed.success) throw new Error(`${path}: not a known-keys file (${describeIssues(parsed.error)})`);
  return { version: 2, providers: parsed.data.providers };
}

/** Written whole, atomically, readable by its owner alone. */
function save(path: string, file: KnownKeysFile): void {
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
  renameSync(temp, path);
}

/**
 * Checks the receipt's key against the file. provider_id is the key's hash, so a known id with another key
 * means the file was edited or the receipt is broken; the serial rule is what catches a new key claiming a
 * device already seen with another. With `record`, first sight is written to the file (atomically, 0600).
 */
export function checkKnownKey(path: string, receipt: Receipt, record: boolean, now = new Date()): ReceiptCheck {
  const file = load(path);
  const id = receipt.provider_id;
  const known = file.providers[id];
  const fail = (detail: string): ReceiptCheck => ({ check: "known_key", ok: false, detail });
  if (known !== undefined) {
    if (known.signing_key !== receipt.signing_key) {
      return fail(`provider ${id} was first seen with key ${known.signing_key}, but this receipt is signed by ${receipt.signing_key}`);
    }
    if (known.serial !== undefined && receipt.serial !== undefined && known.serial !== receipt.serial) {
      return fail(`provider ${id} was first seen with serial ${known.serial}, but this receipt claims ${receipt.serial}`);
    }
    return { check: "known_key", ok: true, detail: `the key is the one ${path} recorded for provider ${id} on ${known.first_seen}` };
  }
  const sameSerial = receipt.serial === undefined ? undefined : Object.entries(file.providers).find(([, k]) => k.serial === receipt.serial);
  if (sameSerial !== undefined) {
    return fail(`serial ${receipt.serial} was first seen with provider ${sameSerial[0]} (key ${sameSerial[1].signing_key}), not this key`);
  }
  if (record) {
    file.providers[id] = { signing_key: receipt.signing_key, ...(receipt.serial === undefined ? {} : { serial: receipt.serial }), first_seen: now.toISOString() };
    save(path, file);
  }
  return { check: "known_key", ok: true, detail: `first sight of provider ${id}: key ${receipt.signing_key} ${record ? "recorded in" : "not yet in"} ${path}` };
}

/**
 * The provider's failed audits in the file, by its id or, under a new key, by its serial: a receipt from a provider
 * with one is INVALID, however well it verifies otherwise.
 */
export function checkAuditRecord(path: string, receipt: Receipt): ReceiptCheck {
  const file = load(path);
  const id = receipt.provider_id;
  const failures = Object.entries(file.providers).flatMap(([known, entry]) =>
    known === id || (receipt.serial !== undefined && entry.serial === receipt.serial) ? (entry.audit_failures ?? []).map((f) => ({ provider: known, ...f })) : [],
  );
  const first = failures[0];
  if (first === undefined) return { check: "audit_record", ok: true, detail: `no failed audit of provider ${id} is recorded in ${path}` };
  const whose = first.provider === id ? `provider ${id}` : `serial ${receipt.serial} (as provider ${first.provider})`;
  return {
    check: "audit_record",
    ok: false,
    detail: `${whose} failed ${failures.length === 1 ? "an audit" : `${failures.length} audits`} recorded in ${path}: evidence sha256 ${first.evidence_sha256} by auditor ${first.auditor_key} at ${first.at}`,
  };
}

/**
 * Records a failed audit that `verify --audit` reproduced against the provider (its key and serial from the receipt
 * the evidence holds, recorded as first seen when the file has not seen it); false when it was recorded already.
 */
export function recordAuditFailure(path: string, provider: { providerId: string; signingKey: string; serial?: string }, failure: AuditFailure, now = new Date()): boolean {
  const file = load(path);
  const known = (file.providers[provider.providerId] ??= {
    signing_key: provider.signingKey,
    ...(provider.serial === undefined ? {} : { serial: provider.serial }),
    first_seen: now.toISOString(),
  });
  if (known.audit_failures?.some((f) => f.evidence_sha256 === failure.evidence_sha256)) return false;
  known.audit_failures = [...(known.audit_failures ?? []), failure];
  save(path, file);
  return true;
}
