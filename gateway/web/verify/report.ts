// What the page /verify shows for a pasted or dropped file: the verdict and each check's result in plain words,
// including the checks a saved file cannot support. Pure, and bundled into the page's script with the verifier.
import { checkSavedResponse, readSavedResponse, type ReceiptCheck, type ReceiptExpectations, type ReceiptStatus, type SavedKind } from "../../../src/receipt/index.ts";

/** The catalog's pins for one alias, as the gateway puts them in the page. */
export interface ModelPin {
  alias: string;
  hub_id: string;
  revision: string;
  sha256: string;
}

/** What the user gave: the saved text, and optionally what ties the key to a provider and the nonce they sent. */
export interface VerifyInputs {
  text: string;
  providerId?: string;
  signingKey?: string;
  clientNonce?: string;
}

export type RowResult = "pass" | "fail" | "not checked";

export interface ReportRow {
  /** The verifier's name for the check (`response_sha256`, …), or `file`, `model`, `key_owner`. */
  check: string;
  label: string;
  result: RowResult;
  words: string;
}

export interface Report {
  status: ReceiptStatus;
  headline: string;
  rows: ReportRow[];
}

const KINDS: Record<SavedKind, string> = {
  response: "a chat completion",
  receipt: "a receipt alone",
  stream: "an SSE transcript",
  responses: "a Responses API response",
  "responses-stream": "a Responses API event stream",
  completion: "a legacy completions response",
  "completion-stream": "a legacy completions SSE transcript",
  embeddings: "an embeddings response",
};

const LABELS: Record<string, string> = {
  format: "Receipt format",
  signature: "Signature",
  provider_id: "Provider id",
  signing_key: "Signing key you gave",
  provider: "Provider id you gave",
  serial: "Serial rule",
  request_sha256: "Request hash (request_sha256)",
  response_sha256: "Response hash (response_sha256)",
  tool_calls_sha256: "Tool-call hash (tool_calls_sha256)",
  reasoning_sha256: "Reasoning hash (reasoning_sha256)",
  logprobs_sha256: "Logprobs hash (logprobs_sha256)",
  content_logprobs_sha256: "Content logprobs hash (content_logprobs_sha256)",
  logprobs: "Logprobs per token",
  client_nonce: "Client nonce",
  usage: "Usage",
  cached_tokens: "Cached prompt tokens",
  finish_reason: "Finish reason",
};

// what a failed check means for the answer, before the verifier's own detail
const FAILED_MEANS: Record<string, string> = {
  format: "this is not a receipt svc issues",
  signature: "the receipt was changed after it was signed, or another key signed it",
  provider_id: "the provider_id does not belong to the key that signed",
  signing_key: "another key than the one you gave signed this receipt",
  provider: "another provider than the one you gave signed this receipt",
  serial: "the receipt breaks the rule that only the hardware rung names a device serial",
  model: "the model is not the one this gateway's catalog pins",
  response_sha256: "the content in the file is not the content the provider signed",
  tool_calls_sha256: "the tool calls in the file are not the ones the provider signed",
  reasoning_sha256: "the reasoning in the file is not what the provider signed",
  logprobs_sha256: "the log probabilities in the file are not the ones the provider signed",
  content_logprobs_sha256: "the content's log probabilities in the file are not the ones the provider signed",
  logprobs: "the file does not have one log probability per generated token",
  client_nonce: "the receipt was not made for the request that sent your nonce",
  usage: "the token counts are not the ones the provider signed",
  cached_tokens: "the receipt counts more cached prompt tokens than the prompt has",
  finish_reason: "the finish reason in the file is not the one the provider signed",
};

const failedWords = (check: string, detail: string) => (FAILED_MEANS[check] === undefined ? detail : `${FAILED_MEANS[check]} (${detail})`);

const MODEL_CHECKS = new Set(["model_id", "model_hub_id", "model_revision", "model_sha256"]);

const given = (value: string | undefined): string | undefined => {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === "" ? undefined : trimmed;
};

const notChecked = (check: string, label: string, words: string): ReportRow => ({ check, label, result: "not checked", words });

/** The report on a file that cannot be read as a saved response: invalid, saying why. */
export const unreadableReport = (words: string): Report => ({ status: "invalid", headline: `Invalid: ${words}.`, rows: [{ check: "file", label: "The file", result: "fail", words }] });

/** Never throws: a file that is no saved response is an invalid report that says why. */
export function verificationReport(inputs: VerifyInputs, pins: readonly ModelPin[]): Report {
  let saved;
  try {
    saved = readSavedResponse(inputs.text);
  } catch (err) {
    return unreadableReport((err as Error).message);
  }
  // hex in a receipt is lowercase; a key or id copied from elsewhere may not be
  const providerId = given(inputs.providerId)?.toLowerCase();
  const signingKey = given(inputs.signingKey)?.toLowerCase();
  const clientNonce = given(inputs.clientNonce);
  const modelId = typeof saved.receipt === "object" && saved.receipt !== null ? (saved.receipt as { model_id?: unknown }).model_id : undefined;
  const pin = pins.find((p) => p.alias === modelId);
  const expect: ReceiptExpectations = {
    ...(providerId === undefined ? {} : { providerId }),
    ...(signingKey === undefined ? {} : { signingKey }),
    ...(clientNonce === undefined ? {} : { clientNonce }),
    ...(pin === undefined ? {} : { model: pin }),
  };
  const verdict = checkSavedResponse(saved, expect);
  const rows: ReportRow[] = [
    { check: "file", label: "The file", result: "pass", words: `read as ${KINDS[saved.kind]}` },
    // a failed stream, a missing receipt, …: the file itself cannot vouch for an answer
    ...saved.problems.map((words): ReportRow => ({ check: "file", label: "The file", result: "fail", words })),
    ...checkRows(verdict.checks),
  ];
  if (verdict.receipt !== undefined) rows.push(...uncheckedRows(verdict.receipt.model_id, { pin, providerId, signingKey, clientNonce, receiptAlone: saved.kind === "receipt" }));
  return { status: verdict.status, headline: headline(verdict.status, rows, verdict.receipt), rows };
}

/** The verifier's checks in order, its four model checks as one "Model pin" row. */
function checkRows(checks: readonly ReceiptCheck[]): ReportRow[] {
  const rows: ReportRow[] = [];
  const model = checks.filter((c) => MODEL_CHECKS.has(c.check));
  for (const c of checks) {
    if (MODEL_CHECKS.has(c.check)) {
      if (c !== model[0]) continue;
      const failed = model.filter((m) => !m.ok);
      const words = failed.length === 0
        ? "the model's alias, hub id, revision and file SHA-256 are this gateway's catalog pins"
        : failedWords("model", failed.map((m) => m.detail).join("; "));
      rows.push({ check: "model", label: "Model pin", result: failed.length === 0 ? "pass" : "fail", words });
      continue;
    }
    rows.push({ check: c.check, label: LABELS[c.check] ?? c.check, result: c.ok ? "pass" : "fail", words: c.ok ? c.detail : failedWords(c.check, c.detail) });
  }
  return rows;
}

interface Unchecked {
  pin: ModelPin | undefined;
  providerId: string | undefined;
  signingKey: string | undefined;
  clientNonce: string | undefined;
  receiptAlone: boolean;
}

/** What the page could not check, and why, so that "valid" is never read as more than it is. */
function uncheckedRows(modelId: string, u: Unchecked): ReportRow[] {
  const rows: ReportRow[] = [];
  if (u.providerId === undefined && u.signingKey === undefined) {
    rows.push(notChecked("key_owner", "Whose key signed", "give the provider id (from GET /v1/providers) or the provider's signing key to tie the key to a provider you trust"));
  }
  if (u.pin === undefined) rows.push(notChecked("model", "Model pin", `this gateway's catalog has no model ${modelId}`));
  rows.push(notChecked("request_sha256", LABELS.request_sha256!, "a saved response does not hold the sealed request (it carries the gateway's undisclosed nonce); the gateway checked this hash before it answered"));
  if (u.receiptAlone) rows.push(notChecked("response_sha256", LABELS.response_sha256!, "the file holds no content, only a receipt"));
  if (u.clientNonce === undefined) rows.push(notChecked("client_nonce", LABELS.client_nonce!, "give the x-svc-receipt-nonce you sent to check the receipt was made for your request"));
  return rows;
}

function headline(status: ReceiptStatus, rows: readonly ReportRow[], receipt: { id: string; provider_id: string; trust_level: string; model_id: string } | undefined): string {
  if (status === "invalid") {
    const failed = [...new Set(rows.filter((r) => r.result === "fail").map((r) => r.label))];
    return `Invalid: ${failed.length === 1 ? "one check failed" : `${failed.length} checks failed`} (${failed.join(", ")}).`;
  }
  if (status === "unverified") return "Unverified: the signature and hashes hold, but nothing ties the key to a provider you trust.";
  return `Valid: receipt ${receipt!.id} signed by provider ${receipt!.provider_id} at rung ${receipt!.trust_level} for ${receipt!.model_id}.`;
}
