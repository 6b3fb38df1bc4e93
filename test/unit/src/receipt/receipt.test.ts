// DESIGN §5 receipts as a unit: RECEIPTS.md's vectors, signing and every verifier check, with no server.
import { sign } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson } from "../../../../src/receipt/canonical-json.ts";
import { providerIdOf } from "../../../../src/receipt/provider-id.ts";
import { nodeSha256Hex } from "../../../../src/crypto/sha256-node.ts";
import { newReceiptId, payloadOf, reportedUsage, signReceipt, verifyReceipt, type Receipt, type ReceiptPayload } from "../../../../src/receipt/receipt.ts";
import { SIGNATURE_DOMAINS, Signer, verifySignature, verifySignatureNative } from "../../../../src/crypto/signing.ts";
import { browserBundle } from "../../../../gateway/web/bundle.ts";

interface Vector {
  name: string;
  seed?: string;
  request?: string;
  content: string;
  /** v2 vectors: the tool calls and reasoning returned beside the content. */
  tool_calls?: unknown[];
  reasoning?: string;
  /** v4 vectors: every token's logprob entry, and those before the content's text. */
  logprobs?: unknown[];
  content_logprobs?: unknown[];
  jcs?: string;
  receipt: Receipt;
  valid: boolean;
  fails?: string[];
}

function vectorsFromDoc(): { domain: string; vectors: Vector[] } {
  const doc = readFileSync(new URL("../../../../RECEIPTS.md", import.meta.url), "utf8");
  const block = /## Test vectors[\s\S]*?```json\n([\s\S]*?)\n```/.exec(doc);
  if (!block) throw new Error("RECEIPTS.md has no test vector block");
  return JSON.parse(block[1]!) as { domain: string; vectors: Vector[] };
}

const failed = (raw: unknown, expect: Parameters<typeof verifyReceipt>[1] = {}) =>
  verifyReceipt(raw, expect).checks.filter((c) => !c.ok).map((c) => c.check);

const key = Signer.fromSeed(Buffer.alloc(32, 1));
const other = Signer.fromSeed(Buffer.alloc(32, 2));
const content = "Hello, world ✓";
const requestBytes = Buffer.from('{"model":"qwen3-4b"}');
const payload: ReceiptPayload = {
  version: 1,
  id: newReceiptId(),
  created: 1_795_305_600,
  provider_id: providerIdOf(key.publicKey),
  trust_level: "transparent",
  model_id: "qwen3-4b",
  model_hub_id: "Qwen/Qwen3-4B-GGUF",
  model_revision: "a".repeat(40),
  model_sha256: "b".repeat(64),
  request_sha256: nodeSha256Hex(requestBytes),
  response_sha256: nodeSha256Hex(content),
  usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  finish_reason: "stop",
  gateway_nonce: "c".repeat(32),
  client_nonce: "my-nonce_0123456789",
};
const receipt = signReceipt(key, payload);
/** Everything the gateway knows for this receipt. */
const gatewayView = {
  signingKey: key.publicKey,
  providerId: payload.provider_id,
  trustLevel: "transparent" as const,
  model: { alias: "qwen3-4b", hub_id: "Qwen/Qwen3-4B-GGUF", revision: "a".repeat(40), sha256: "b".repeat(64) },
  requestSha256: nodeSha256Hex(requestBytes),
  content,
  gatewayNonce: "c".repeat(32),
  clientNonce: "my-nonce_0123456789",
};

/** What a vector's answer was: content, and (none, for a v1 vector) tool calls and reasoning; logprobs only for v4. */
const answerOf = (v: Vector) => ({ content: v.content, toolCalls: v.tool_calls ?? [], reasoning: v.reasoning ?? null, logprobs: v.logprobs ?? [], contentLogprobs: v.content_logprobs ?? [] });

describe("RECEIPTS.md test vectors", () => {
  const { domain, vectors } = vectorsFromDoc();

  it("uses the receipt domain", () => expect(domain).toBe("svc-receipt/v1"));

  it("valid vectors: the seed's key, the JCS bytes, both hashes and the exact signature", () => {
    const valid = vectors.filter((v) => v.valid);
    expect(valid.length).toBeGreaterThanOrEqual(3);
    expect(valid.map((v) => v.receipt.version)).toEqual(expect.arrayContaining([1, 2, 3, 4]));
    for (const v of valid) {
      const signer = Signer.fromSeed(Buffer.from(v.seed!, "hex"));
      expect(v.receipt.signing_key, v.name).toBe(signer.publicKey);
      expect(canonicalJson(payloadOf(v.receipt)), v.name).toBe(v.jcs);
      expect(v.receipt.request_sha256, v.name).toBe(nodeSha256Hex(v.request!));
      expect(v.receipt.response_sha256, v.name).toBe(nodeSha256Hex(v.content));
      if (v.receipt.version !== 1) {
        expect(v.receipt.tool_calls_sha256, v.name).toBe(v.tool_calls ? nodeSha256Hex(canonicalJson(v.tool_calls)) : null);
        expect(v.receipt.reasoning_sha256, v.name).toBe(v.reasoning === undefined ? null : nodeSha256Hex(v.reasoning));
      }
      if (v.receipt.version === 4) {
        expect(v.receipt.logprobs_sha256, v.name).toBe(nodeSha256Hex(canonicalJson(v.logprobs)));
        expect(v.receipt.content_logprobs_sha256, v.name).toBe(nodeSha256Hex(canonicalJson(v.content_logprobs)));
      }
      // recomputed from first principles, not through our Signer: PKCS#8 wrapping of the raw seed
      const pkcs8 = Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), Buffer.from(v.seed!, "hex")]);
      const message = Buffer.concat([Buffer.from(`${domain}\0`), Buffer.from(v.jcs!)]);
      expect(sign(null, message, { key: pkcs8, format: "der", type: "pkcs8" }).toString("hex"), v.name).toBe(v.receipt.signature);
      expect(verifyReceipt(v.receipt, { ...answerOf(v), signingKey: signer.publicKey }), v.name).toMatchObject({ status: "valid", valid: true, problems: [] });
      // anyone can make a key: a vector that holds together is not vouched for without one you trust
      expect(verifyReceipt(v.receipt, { content: v.content }), v.name).toMatchObject({ status: "unverified", valid: false, problems: [] });
    }
  });

  it("invalid vectors fail exactly the checks they name", () => {
    const invalid = vectors.filter((v) => !v.valid);
    expect(invalid.length).toBeGreaterThanOrEqual(3);
    for (const v of invalid) expect(failed(v.receipt, answerOf(v)), v.name).toEqual(v.fails);
  });
});

describe("RECEIPTS.md step 4: valid only when the key is tied to a provider you trust", () => {
  // the attack: a fresh random key signs a self-consistent receipt claiming the top rung and a made-up serial
  const forger = Signer.fromSeed(Buffer.alloc(32, 0x66));
  const forged = signReceipt(forger, { ...payload, provider_id: providerIdOf(forger.publicKey), trust_level: "hardware", serial: "MADE-UP-SERIAL" });

  it("without a key or provider id, a receipt that holds together is unverified, and valid is false", () => {
    expect(verifyReceipt(forged, { content })).toMatchObject({ status: "unverified", valid: false, problems: [] });
  });

  it("the key or the provider id of the provider you trust makes it valid; another's makes it invalid", () => {
    expect(verifyReceipt(forged, { content, signingKey: forger.publicKey })).toMatchObject({ status: "valid", valid: true });
    expect(verifyReceipt(forged, { content, providerId: providerIdOf(forger.publicKey) })).toMatchObject({ status: "valid", valid: true });
    expect(verifyReceipt(forged, { content, signingKey: key.publicKey })).toMatchObject({ status: "invalid", valid: false });
    expect(verifyReceipt(forged, { content, providerId: payload.provider_id })).toMatchObject({ status: "invalid", valid: false });
  });

  it("a pin (a prefix) or a rung alone ties nothing: still unverified", () => {
    const id = providerIdOf(forger.publicKey);
    expect(verifyReceipt(forged, { content, pin: id.slice(0, 8), trustLevel: "hardware", serial: "MADE-UP-SERIAL" }).status).toBe("unverified");
  });

  it("a failed check is invalid whatever trust is given", () => {
    expect(verifyReceipt({ ...forged, serial: "EDITED" }, { content }).status).toBe("invalid");
    expect(verifyReceipt({ ...forged, serial: "EDITED" }, { content, signingKey: forger.publicKey }).status).toBe("invalid");
  });
});

describe("DESIGN §5 receipts: what the gateway verifies", () => {
  it("an honest receipt passes every check the gateway runs", () => {
    // gatewayView is what gateway/directory/coordinator-client.ts passes: the attested key makes it `valid`
    const verdict = verifyReceipt(receipt, gatewayView);
    expect(verdict.problems).toEqual([]);
    expect(verdict.status).toBe("valid");
    expect(verdict.valid).toBe(true);
    expect(verdict.checks.map((c) => c.check)).toEqual(
      expect.arrayContaining(["signature", "provider_id", "signing_key", "trust_level", "model_sha256", "request_sha256", "response_sha256", "gateway_nonce", "client_nonce"]),
    );
  });

  it("the signature covers the JCS form of every payload field, not the two signature fields", () => {
    const reordered = Object.fromEntries(Object.entries(receipt).reverse());
    expect(verifyReceipt(reordered, gatewayView).valid).toBe(true);
    expect(receipt.signature).toBe(key.sign("svc-receipt/v1", payload));
  });

  it("a tampered field breaks the signature", () => {
    for (const change of [{ usage: { prompt_tokens: 10, completion_tokens: 6, total_tokens: 16 } }, { model_id: "qwen3-8b" }, { created: payload.created + 1 }, { finish_reason: "length" }]) {
      expect(failed({ ...receipt, ...change }), JSON.stringify(change)).toContain("signature");
    }
  });

  it("a swapped signing key: the id is not the key's hash and the key is not the attested one", () => {
    const swapped = signReceipt(other, payload);
    expect(failed(swapped, gatewayView)).toEqual(["provider_id", "signing_key"]);
  });

  it("a receipt from another provider fails the attested key and the provider", () => {
    const theirs = signReceipt(other, { ...payload, provider_id: providerIdOf(other.publicKey) });
    expect(failed(theirs)).toEqual([]);
    expect(failed(theirs, gatewayView)).toEqual(["signing_key", "provider"]);
  });

  it("a receipt replayed on another request fails the request hash, both nonces and the content", () => {
    const next = { ...gatewayView, requestSha256: nodeSha256Hex("another request"), gatewayNonce: "d".repeat(32), clientNonce: "another-nonce-0123", content: "another answer" };
    expect(failed(receipt, next)).toEqual(["request_sha256", "response_sha256", "gateway_nonce", "client_nonce"]);
  });

  it("a wrong response hash, correctly signed, fails against the content relayed", () => {
    const wrong = signReceipt(key, { ...payload, response_sha256: nodeSha256Hex(`${content}!`) });
    expect(failed(wrong, gatewayView)).toEqual(["response_sha256"]);
  });

  it("the rung, the serial, the model pins and the pin are checked against the directory and catalog", () => {
    expect(failed(receipt, { ...gatewayView, trustLevel: "hardware", serial: "C02X" })).toEqual(["trust_level", "serial"]);
    const hardware = signReceipt(key, { ...payload, trust_level: "hardware", serial: "C02X" });
    expect(failed(hardware, { ...gatewayView, trustLevel: "hardware", serial: "C02X" })).toEqual([]);
    expect(failed(hardware, { ...gatewayView, trustLevel: "hardware", serial: "OTHER" })).toEqual(["serial"]);
    expect(failed(signReceipt(key, { ...payload, trust_level: "hardware" }))).toEqual(["serial"]);
    expect(failed(receipt, { ...gatewayView, model: { ...gatewayView.model, sha256: "e".repeat(64) } })).toEqual(["model_sha256"]);
    expect(failed(receipt, { ...gatewayView, pin: payload.provider_id.slice(0, 8) })).toEqual([]);
    expect(failed(receipt, { ...gatewayView, pin: "00000000" })).toEqual(["pin"]);
  });

  it("usage must add up and equal what the response reported", () => {
    expect(failed(signReceipt(key, { ...payload, usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 99 } }))).toEqual(["usage"]);
    expect(failed(receipt, { usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } })).toEqual([]);
    expect(failed(receipt, { usage: { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 } })).toEqual(["usage"]);
    expect(failed(receipt, { usage: "15 tokens" })).toEqual(["usage"]);
  });

  it("the format is closed: a missing or an extra field is not a v1 receipt", () => {
    const { client_nonce: _dropped, ...missing } = receipt;
    expect(verifyReceipt(missing).problems[0]).toMatch(/^not a v1, v2, v3 or v4 receipt \(client_nonce: /);
    expect(verifyReceipt({ ...receipt, tip: 1 }).valid).toBe(false);
  });

  it("never throws, whatever it is given", () => {
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), fc.record({ ...Object.fromEntries(Object.keys(receipt).map((k) => [k, fc.jsonValue()])) })), (raw) => {
        const verdict = verifyReceipt(raw, gatewayView);
        expect(verdict.valid).toBe(false);
        expect(verdict.problems.length).toBeGreaterThan(0);
      }),
      { numRuns: 300 },
    );
  });

  it("v4 (issue 43): the logprobs shown are the ones covered, one per completion token; an older receipt covers none", () => {
    const entry = (token: string, logprob: number) => ({ id: token.charCodeAt(0), token, bytes: [token.charCodeAt(0)], logprob, top_logprobs: [] });
    const shown = [entry("H", -0.5), entry("i", -0.25), entry(".", -1)];
    const v3 = { ...payload, version: 3, usage: { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 }, tool_calls_sha256: null, reasoning_sha256: null, cached_tokens: 0 } as const;
    const v4 = signReceipt(key, { ...v3, version: 4, logprobs_sha256: nodeSha256Hex(canonicalJson(shown)), content_logprobs_sha256: nodeSha256Hex(canonicalJson(shown.slice(0, 2))) } as ReceiptPayload);
    const expect4 = { ...gatewayView, logprobs: shown, contentLogprobs: shown.slice(0, 2) };
    expect(verifyReceipt(v4, expect4)).toMatchObject({ status: "valid", problems: [] });
    expect(failed(v4, { ...expect4, logprobs: [shown[0], { ...shown[1]!, logprob: -0.3 }, shown[2]] })).toEqual(["logprobs_sha256"]);
    expect(failed(v4, { ...expect4, contentLogprobs: shown })).toEqual(["content_logprobs_sha256"]);
    expect(failed(v4, { ...expect4, logprobs: [], contentLogprobs: [] })).toEqual(["logprobs_sha256", "logprobs", "content_logprobs_sha256"]);
    // a v3 receipt vouches for an answer without logprobs only
    const old = signReceipt(key, v3 as ReceiptPayload);
    expect(verifyReceipt(old, { ...gatewayView, logprobs: [], contentLogprobs: [] }).status).toBe("valid");
    expect(failed(old, { ...gatewayView, logprobs: shown })).toEqual(["logprobs_sha256"]);
  });
});

describe("RECEIPTS.md v2: receipts that cover tool calls and reasoning", () => {
  const calls = [{ id: "call_1", type: "function", function: { name: "f", arguments: '{"a":1}' } }];
  const v2 = signReceipt(key, {
    ...payload,
    version: 2,
    response_sha256: nodeSha256Hex(""),
    finish_reason: "tool_calls",
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, completion_tokens_details: { reasoning_tokens: 3 } },
    tool_calls_sha256: nodeSha256Hex(canonicalJson(calls)),
    reasoning_sha256: nodeSha256Hex("hm"),
  });
  const answer = { content: "", toolCalls: calls, reasoning: "hm", signingKey: key.publicKey };

  it("verifies against the calls and reasoning returned, and the usage with its details", () => {
    expect(verifyReceipt(v2, { ...answer, version: 2, usage: v2.usage, finishReason: "tool_calls" }).problems).toEqual([]);
  });

  it("a changed argument, a reasoning left out or added, a usage without its details: each fails its check", () => {
    expect(failed(v2, { ...answer, toolCalls: [{ ...calls[0], function: { name: "f", arguments: '{"a":2}' } }] })).toEqual(["tool_calls_sha256"]);
    expect(failed(v2, { ...answer, toolCalls: [] })).toEqual(["tool_calls_sha256"]);
    expect(failed(v2, { ...answer, reasoning: null })).toEqual(["reasoning_sha256"]);
    expect(failed(v2, { ...answer, usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } })).toEqual(["usage"]);
  });

  it("a v1 receipt covers no tool calls or reasoning, and cannot say tool_calls", () => {
    expect(failed(receipt, { content, toolCalls: [], reasoning: null })).toEqual([]);
    expect(failed(receipt, { content, toolCalls: calls })).toEqual(["tool_calls_sha256"]);
    expect(failed(receipt, { content, reasoning: "hm" })).toEqual(["reasoning_sha256"]);
    // a provider answering a request with tools must not fall back to a v1 receipt
    expect(failed(receipt, { content, version: 2 })).toEqual(["version"]);
    expect(failed(signReceipt(key, { ...payload, finish_reason: "tool_calls" } as never))).toEqual(["format"]);
  });
});

describe("RECEIPTS.md v3: receipts that state the prompt tokens reused from the cache", () => {
  const v3 = signReceipt(key, { ...payload, version: 3, tool_calls_sha256: null, reasoning_sha256: null, cached_tokens: 6 });
  const answer = { content, toolCalls: [], reasoning: null, signingKey: key.publicKey };
  const reported = { ...payload.usage, prompt_tokens_details: { cached_tokens: 6 } };

  it("verifies against the usage an answer reports: the receipt's, with prompt_tokens_details.cached_tokens", () => {
    expect(reportedUsage(v3)).toEqual(reported);
    expect(verifyReceipt(v3, { ...answer, version: 3, usage: reported, finishReason: "stop" })).toMatchObject({ status: "valid", problems: [] });
  });

  it("a cached count edited in the usage, or left out, fails the usage check; edited in the receipt, the signature", () => {
    expect(failed(v3, { ...answer, usage: { ...reported, prompt_tokens_details: { cached_tokens: 0 } } })).toEqual(["usage"]);
    expect(failed(v3, { ...answer, usage: payload.usage })).toEqual(["usage"]);
    expect(failed({ ...v3, cached_tokens: 0 }, answer)).toEqual(["signature"]);
    // a v1 or v2 receipt states nothing cached: a usage that claims some is not its
    expect(failed(receipt, { content, usage: reported })).toEqual(["usage"]);
  });

  it("more cached tokens than the prompt has is refused; a v3 without cached_tokens is not a receipt", () => {
    expect(failed(signReceipt(key, { ...payload, version: 3, tool_calls_sha256: null, reasoning_sha256: null, cached_tokens: 11 }), answer)).toEqual(["cached_tokens"]);
    const { cached_tokens: _dropped, ...without } = payloadOf(v3) as ReceiptPayload & { cached_tokens: number };
    expect(failed(signReceipt(key, without as ReceiptPayload))).toEqual(["format"]);
    expect(failed(signReceipt(key, { ...payload, cached_tokens: 1 } as never))).toEqual(["format"]);
  });

  it("a gateway of this build asks for v3: a v1 or v2 receipt is refused for it", () => {
    expect(failed(v3, { ...answer, version: 3 })).toEqual([]);
    expect(failed(receipt, { content, version: 3 })).toEqual(["version"]);
  });
});

describe("src/receipt/index.ts: one verifier module set for node and browsers", () => {
  const source = (path: string) => fileURLToPath(new URL(path, import.meta.url));

  it("bundles for a browser with no node: module and no Buffer, and the bundle verifies every RECEIPTS.md vector", async () => {
    const { code, inputs } = await browserBundle(source("../../../../src/receipt/index.ts"), "esm");
    expect(inputs).toEqual(expect.arrayContaining(["src/receipt/receipt.ts", "src/receipt/saved-response.ts", "src/receipt/canonical-json.ts", "src/receipt/sha256.ts", "src/receipt/signature.ts", "src/receipt/provider-id.ts"]));
    expect(inputs.filter((f) => f.startsWith("node_modules/@noble/")).length).toBeGreaterThan(0);
    expect(code).not.toMatch(/\bBuffer\b/);
    // the exact bytes a browser gets, run here
    const dir = mkdtempSync(join(tmpdir(), "svc-verifier-"));
    writeFileSync(join(dir, "verifier.mjs"), code);
    const bundled = (await import(pathToFileURL(join(dir, "verifier.mjs")).href)) as typeof import("../../../../src/receipt/index.ts");
    rmSync(dir, { recursive: true });
    const { vectors } = vectorsFromDoc();
    for (const v of vectors.filter((v) => v.valid)) {
      expect(bundled.verifyReceipt(v.receipt, { ...answerOf(v), signingKey: v.receipt.signing_key }), v.name).toMatchObject({ status: "valid", problems: [] });
      expect(bundled.verifyReceipt(v.receipt, { ...answerOf(v), providerId: v.receipt.provider_id }), v.name).toMatchObject({ status: "valid", problems: [] });
      expect(bundled.verifyReceipt(v.receipt, answerOf(v)).status, v.name).toBe("unverified");
    }
    for (const v of vectors.filter((v) => !v.valid)) {
      expect(bundled.verifyReceipt(v.receipt, answerOf(v)).checks.filter((c) => !c.ok).map((c) => c.check), v.name).toEqual(v.fails);
    }
    expect(vectors.filter((v) => !v.valid).map((v) => v.receipt.version)).toContain(2);
  });

  it("a browser build refuses node's crypto, so the signing side (node:crypto) could never slip into the set", async () => {
    await expect(browserBundle(source("../../../../src/crypto/signing.ts"))).rejects.toThrow(/node:crypto/);
  });
});

describe("DESIGN §5 the gateway's signature check on node's native Ed25519", () => {
  const check = (key: string, payload: unknown, signature: string) =>
    [verifySignatureNative(key, SIGNATURE_DOMAINS.receipt, payload, signature), verifySignature(key, SIGNATURE_DOMAINS.receipt, payload, signature)];

  it("agrees with the portable check: valid vectors hold, a flipped signature bit, another key or bad hex do not", () => {
    const { vectors } = vectorsFromDoc();
    for (const v of vectors.filter((v) => v.valid)) {
      const r = v.receipt;
      expect(check(r.signing_key, payloadOf(r), r.signature), v.name).toEqual([true, true]);
      const flipped = (parseInt(r.signature[0]!, 16) ^ 1).toString(16) + r.signature.slice(1);
      expect(check(r.signing_key, payloadOf(r), flipped), v.name).toEqual([false, false]);
      expect(check(other.publicKey, payloadOf(r), r.signature), v.name).toEqual([false, false]);
    }
    expect(check("zz", {}, "00")).toEqual([false, false]);
    expect(verifyReceipt(receipt, { content }, { signature: verifySignatureNative }).problems).toEqual([]);
    expect(failed({ ...receipt, created: receipt.created + 1 }, { content })).toEqual(failedWith({ ...receipt, created: receipt.created + 1 }, { content }));
  });
});

const failedWith = (raw: unknown, expect: Parameters<typeof verifyReceipt>[1]) =>
  verifyReceipt(raw, expect, { signature: verifySignatureNative }).checks.filter((c) => !c.ok).map((c) => c.check);
