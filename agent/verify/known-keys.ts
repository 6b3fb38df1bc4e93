// `svc-agent verify --trust-on-first-use FILE`: the providers' keys seen before, SSH known_hosts style. First
// sight of a provider records its key (and serial) and passes; a later receipt that contradicts it fails.
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { z } from "zod";
import { Hex32 } from "../../src/receipt/hex.ts";
import type { Receipt, ReceiptCheck } from "../../src/receipt/receipt.ts";
import { describeIssues } from "../../src/validation.ts";

const Known = z.strictObject({ signing_key: Hex32, serial: z.string().min(1).optional(), first_seen: z.string() });
const KnownKeysFile = z.strictObject({ version: z.literal(1), providers: z.record(Hex32, Known) });
type KnownKeysFile = z.infer<typeof KnownKeysFile>;

/** Throws an Error naming the file when it exists but is not ours; a missing file is an empty one. */
function load(path: string): KnownKeysFile {
  if (!existsSync(path)) return { version: 1, providers: {} };
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw new Error(`${path}: not a known-keys file (${(err as Error).message})`);
  }
  const parsed = KnownKeysFile.safeParse(json);
  if (!parsed.success) throw new Error(`${path}: not a known-keys file (${describeIssues(parsed.error)})`);
  return parsed.data;
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
    const temp = `${path}.${process.pid}.tmp`;
    writeFileSync(temp, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
    renameSync(temp, path);
  }
  return { check: "known_key", ok: true, detail: `first sight of provider ${id}: key ${receipt.signing_key} ${record ? "recorded in" : "not yet in"} ${path}` };
}
