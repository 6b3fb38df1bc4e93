// `svc-agent verify FILE`: re-checks a saved response's receipt offline (RECEIPTS.md) and says whether the key
// that signed it is tied to a provider you trust: a directory listing, a known key, or keys seen before.
import { createReadStream } from "node:fs";
import { z } from "zod";
import { checkSavedResponse, decodeSavedBytes, readSavedResponse, receiptStatus, type Receipt, type ReceiptCheck, type ReceiptExpectations, type ReceiptStatus, type SavedKind } from "../../src/receipt/index.ts";
import { TRUST_LEVELS } from "../../src/receipt/rungs.ts";
import { MAX_SAVED_BYTES, TOO_LARGE } from "../../src/receipt/saved-text.ts";
import { checkAuditRecord, checkKnownKey } from "./known-keys.ts";

export interface VerifyFlags {
  /** A provider listing (`{gateway}/v1/providers`) whose entry for the receipt's provider must match it. */
  providers?: string;
  apiKey?: string;
  /** The provider's Ed25519 key, hex, known some other way (`--key`, or its old name `--provider-key`). */
  key?: string;
  providerKey?: string;
  /** A file of keys seen before (trust on first use). */
  trustOnFirstUse?: string;
  /** The `x-svc-receipt-nonce` the caller sent. */
  nonce?: string;
}

/** The process exit code for each verdict; 3 when the check could not run (file, listing), 64 for usage. */
export const VERIFY_EXIT: Record<ReceiptStatus, number> = { valid: 0, invalid: 1, unverified: 2 };
export const CANNOT_CHECK_EXIT = 3;

export const UNVERIFIED_LINE = "UNVERIFIED: signature and hashes hold, but nothing ties the key to a provider you trust";

const KINDS: Record<SavedKind, string> = {
  response: "a chat completion response",
  receipt: "a receipt alone",
  stream: "an SSE transcript",
  responses: "a Responses API response",
  "responses-stream": "a Responses API event stream",
  completion: "a legacy completions response",
  "completion-stream": "a legacy completions SSE transcript",
  embeddings: "an embeddings response",
};

/**
 * Where the listing's gateway audits its providers (issue 43), each entry's record: only the failures that still bar
 * count here. `barring` leaves out those an operator cleared; an older gateway lists only `failed`.
 */
const ListedAuditsSchema = z.looseObject({
  failed: z.int().min(0),
  barring: z.int().min(0).optional(),
  // Unix seconds, up to the last a Date can show
  last: z.looseObject({ id: z.string().max(200), at: z.int().min(0).max(8_640_000_000_000) }).nullable().optional(),
});
const ListingSchema = z.array(z.looseObject({ id: z.string(), trust: z.enum(TRUST_LEVELS), serial: z.string().optional(), audits: ListedAuditsSchema.optional(), in_rotation: z.boolean().optional() }));
type ListingEntry = z.infer<typeof ListingSchema>[number];

/**
 * Prints the report and resolves the verdict. A file that is no saved response is `invalid`; a file or
 * listing it cannot read throws, which the command line turns into CANNOT_CHECK_EXIT.
 */
export async function verifyFile(path: string, flags: VerifyFlags, print: (line: string) => void): Promise<ReceiptStatus> {
  const bytes = await readAtMost(path, MAX_SAVED_BYTES).catch((err: Error) => {
    throw new Error(`cannot read ${path}: ${err.message}`);
  });
  let saved;
  try {
    if (bytes === undefined) throw new Error(TOO_LARGE);
    // the bytes, not node's lenient utf8 decoding: invalid UTF-8 and a byte order mark are refused, not smoothed over
    saved = readSavedResponse(decodeSavedBytes(bytes));
  } catch (err) {
    print(`${path}: not a saved response`);
    print(`INVALID: ${(err as Error).message}`);
    return "invalid";
  }
  const key = flags.key ?? flags.providerKey;
  const base: ReceiptExpectations = {
    ...(key === undefined ? {} : { signingKey: key }),
    ...(flags.nonce === undefined ? {} : { clientNonce: flags.nonce }),
  };
  let verdict = checkSavedResponse(saved, base);
  const extra: ReceiptCheck[] = [];
  if (flags.providers !== undefined && verdict.receipt) {
    const { url, entry } = await listingEntry(flags.providers, flags.apiKey, verdict.receipt.provider_id);
    extra.push(listedCheck(url, verdict.receipt.provider_id, entry));
    // a provider the listing shows with a failed audit is refused, whatever its receipt says (issue 43 item 4)
    if (entry?.audits !== undefined) extra.push(listedAuditsCheck(url, entry.id, entry.audits, entry.in_rotation));
    // the listing's rung and serial, not the receipt's own claim, are what it is held to
    if (entry) verdict = checkSavedResponse(saved, { ...base, providerId: entry.id, trustLevel: entry.trust, ...(entry.serial === undefined ? {} : { serial: entry.serial }) });
  }
  const receipt = verdict.receipt;
  if (flags.trustOnFirstUse !== undefined && receipt) {
    const holds = verdict.problems.length === 0 && extra.every((c) => c.ok);
    // only a receipt that otherwise holds may introduce a key
    extra.push(checkKnownKey(flags.trustOnFirstUse, receipt, holds));
    // a provider that failed an audit reproduced here is refused whatever else holds (issue 43 item 4)
    extra.push(checkAuditRecord(flags.trustOnFirstUse, receipt));
  }
  const problems = [...verdict.problems, ...extra.filter((c) => !c.ok).map((c) => c.detail)];
  const status = receiptStatus(problems, verdict.status === "valid" || extra.some((c) => c.check === "known_key" && c.ok));

  print(`${path}: ${KINDS[saved.kind]}`);
  for (const problem of saved.problems) print(`  FAIL  ${problem}`);
  for (const check of [...verdict.checks, ...extra]) print(`  ${check.ok ? "ok  " : "FAIL"}  ${check.detail}`);
  for (const note of notes(flags, receipt, saved.kind === "receipt")) print(`  --    ${note}`);
  print(verdictLine(status, problems, receipt));
  return status;
}

/** The file's bytes, or undefined past `limit`: reading stops there (a hostile file, or a device that never ends). */
export async function readAtMost(path: string, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    total += chunk.length;
    // leaving the loop destroys the stream
    if (total > limit) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function notes(flags: VerifyFlags, receipt: Receipt | undefined, noContent: boolean): string[] {
  if (!receipt) return [];
  const out: string[] = [];
  if (noContent) out.push("response_sha256 not recomputed: the file holds no content");
  if (flags.providers === undefined && flags.key === undefined && flags.providerKey === undefined && flags.trustOnFirstUse === undefined) {
    out.push("the key's owner not checked: pass --providers URL, --key HEX or --trust-on-first-use FILE");
  } else if (flags.providers === undefined) {
    out.push(`trust_level ${receipt.trust_level} is the provider's own claim: only --providers holds it to a directory`);
  }
  return out;
}

function verdictLine(status: ReceiptStatus, problems: string[], receipt: Receipt | undefined): string {
  if (status === "invalid" || !receipt) return `INVALID: ${problems.join("; ")}`;
  if (status === "unverified") return UNVERIFIED_LINE;
  return `VALID: receipt ${receipt.id} signed by provider ${receipt.provider_id} at rung ${receipt.trust_level} for ${receipt.model_id}`;
}

async function listingEntry(url: string, apiKey: string | undefined, providerId: string): Promise<{ url: string; entry: ListingEntry | undefined }> {
  const listingUrl = providersUrl(url);
  const res = await fetch(listingUrl, { headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {} }).catch((err: Error) => {
    throw new Error(`cannot reach ${listingUrl}: ${err.message}`);
  });
  if (!res.ok) throw new Error(`${listingUrl} answered ${res.status}${res.status === 401 ? " (pass --api-key or set SVC_API_KEY)" : ""}`);
  const listing = ListingSchema.safeParse(await res.json().catch(() => undefined));
  if (!listing.success) throw new Error(`${listingUrl} did not return a provider listing`);
  return { url: listingUrl, entry: listing.data.find((p) => p.id === providerId) };
}

function listedCheck(url: string, providerId: string, entry: ListingEntry | undefined): ReceiptCheck {
  return {
    check: "listed",
    ok: entry !== undefined,
    detail: entry
      ? `provider ${providerId} is listed by ${url} at rung ${entry.trust}${entry.serial === undefined ? "" : ` with serial ${entry.serial}`}`
      : `provider ${providerId} is not listed by ${url}`,
  };
}

function listedAuditsCheck(url: string, providerId: string, audits: z.infer<typeof ListedAuditsSchema>, inRotation: boolean | undefined): ReceiptCheck {
  const last = audits.last ? ` (the last ${audits.last.id} at ${new Date(audits.last.at * 1000).toISOString()})` : "";
  const barring = audits.barring ?? audits.failed;
  const cleared = audits.failed - barring > 0 ? ` (${audits.failed - barring} cleared by an operator)` : "";
  if (barring > 0) return { check: "listed_audits", ok: false, detail: `${url} shows ${barring === 1 ? "a failed audit" : `${barring} failed audits`} of provider ${providerId}${last}` };
  // a bar this gateway applied before its store shows it (or a store it cannot read)
  if (inRotation === false) return { check: "listed_audits", ok: false, detail: `${url} shows provider ${providerId} out of rotation${last}` };
  return { check: "listed_audits", ok: true, detail: audits.failed === 0 ? `${url} shows no failed audit of provider ${providerId}` : `${url} shows no failed audit of provider ${providerId} that still bars it${cleared}` };
}

/** Accepts the listing's own URL, the API base (`…/v1`) or the gateway origin. */
export function providersUrl(url: string): string {
  const parsed = new URL(url);
  const path = parsed.pathname.replace(/\/+$/, "");
  if (!path.endsWith("/v1/providers")) parsed.pathname = path.endsWith("/v1") ? `${path}/providers` : `${path}/v1/providers`;
  return parsed.toString();
}
