// `svc-agent verify FILE`: re-checks a saved response's receipt offline (RECEIPTS.md), optionally against a
// provider directory or a known key, and prints one line per check and a verdict.
import { readFile } from "node:fs/promises";
import { z } from "zod";
import type { ReceiptCheck } from "../src/receipt.ts";
import { verifySavedResponse, type SavedKind } from "../src/saved-response.ts";

export interface VerifyFlags {
  /** A provider listing (`{gateway}/v1/providers`) that must list the receipt's provider. */
  providers?: string;
  apiKey?: string;
  /** The provider's Ed25519 key, hex, known some other way. */
  providerKey?: string;
  /** The `x-svc-receipt-nonce` the caller sent. */
  nonce?: string;
}

const KINDS: Record<SavedKind, string> = {
  response: "a chat completion response",
  receipt: "a receipt alone",
  stream: "an SSE transcript",
};

const ListingSchema = z.array(z.looseObject({ id: z.string(), trust: z.string() }));

/** Prints the report; resolves true when the receipt is valid. Throws on a file or listing it cannot read. */
export async function verifyFile(path: string, flags: VerifyFlags, print: (line: string) => void): Promise<boolean> {
  const text = await readFile(path, "utf8").catch((err: Error) => {
    throw new Error(`cannot read ${path}: ${err.message}`);
  });
  const verdict = verifySavedResponse(text, {
    ...(flags.providerKey === undefined ? {} : { signingKey: flags.providerKey }),
    ...(flags.nonce === undefined ? {} : { clientNonce: flags.nonce }),
  });
  const { saved, receipt } = verdict;
  const listed = flags.providers !== undefined && receipt ? await listedCheck(flags.providers, flags.apiKey, receipt.provider_id) : undefined;
  const checks: ReceiptCheck[] = listed ? [...verdict.checks, listed] : verdict.checks;
  const problems = listed && !listed.ok ? [...verdict.problems, listed.detail] : verdict.problems;

  print(`${path}: ${KINDS[saved.kind]}`);
  for (const problem of saved.problems) print(`  FAIL  ${problem}`);
  for (const check of checks) print(`  ${check.ok ? "ok  " : "FAIL"}  ${check.detail}`);
  if (saved.content === undefined && receipt) print("  --    response_sha256 not recomputed: the file holds no content");
  if (flags.providers === undefined && flags.providerKey === undefined && receipt) {
    print("  --    the key's owner not checked: pass --providers URL or --provider-key HEX");
  }
  if (problems.length === 0 && receipt) {
    print(`VALID: receipt ${receipt.id} signed by provider ${receipt.provider_id} at rung ${receipt.trust_level} for ${receipt.model_id}`);
    return true;
  }
  print(`INVALID: ${problems.join("; ")}`);
  return false;
}

async function listedCheck(url: string, apiKey: string | undefined, providerId: string): Promise<ReceiptCheck> {
  const listingUrl = providersUrl(url);
  const res = await fetch(listingUrl, { headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {} }).catch((err: Error) => {
    throw new Error(`cannot reach ${listingUrl}: ${err.message}`);
  });
  if (!res.ok) throw new Error(`${listingUrl} answered ${res.status}${res.status === 401 ? " (pass --api-key or set SVC_API_KEY)" : ""}`);
  const listing = ListingSchema.safeParse(await res.json().catch(() => undefined));
  if (!listing.success) throw new Error(`${listingUrl} did not return a provider listing`);
  const entry = listing.data.find((p) => p.id === providerId);
  return {
    check: "listed",
    ok: entry !== undefined,
    detail: entry ? `provider ${providerId} is listed by ${listingUrl} (rung ${entry.trust} now)` : `provider ${providerId} is not listed by ${listingUrl}`,
  };
}

/** Accepts the listing's own URL, the API base (`…/v1`) or the gateway origin. */
export function providersUrl(url: string): string {
  const parsed = new URL(url);
  const path = parsed.pathname.replace(/\/+$/, "");
  if (!path.endsWith("/v1/providers")) parsed.pathname = path.endsWith("/v1") ? `${path}/providers` : `${path}/v1/providers`;
  return parsed.toString();
}
