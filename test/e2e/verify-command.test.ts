// `svc-agent verify` fails closed (docs/verifying.md, RECEIPTS.md step 4): the real command line against
// saved receipts and a stub provider listing. VALID needs a key tied to a provider you trust; a receipt forged
// with a fresh key is UNVERIFIED without trust input and INVALID against a listing that says otherwise.
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { providerIdOf } from "../../src/receipt/provider-id.ts";
import { newReceiptId, signReceipt, type ReceiptPayload } from "../../src/receipt/receipt.ts";
import { Signer } from "../../src/crypto/signing.ts";
import type * as PackageEntry from "../../index.js";
import { decodeSavedBytes } from "../../src/receipt/index.ts";
import { runCli, runNode } from "../../harness/cli.ts";
import { receiptPayload } from "../fixtures/receipt-payload.ts";
import { savedBody } from "../fixtures/saved-answer.ts";

const dir = mkdtempSync(join(tmpdir(), "svc-verify-"));
let listing: Server;
let listingUrl = "";
/** What the stub gateway lists at /v1/providers. */
let providers: { id: string; trust: string; serial?: string }[] = [];

beforeAll(async () => {
  listing = createServer((req, res) => {
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify(req.url === "/v1/providers" ? providers : { error: "no" }));
  });
  await new Promise<void>((resolve) => listing.listen(0, "127.0.0.1", resolve));
  listingUrl = `http://127.0.0.1:${(listing.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => listing.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

const content = "Hello ✓";
const honest = Signer.fromSeed(Buffer.alloc(32, 0x11));
const forger = Signer.fromSeed(Buffer.alloc(32, 0x66));

function receiptFile(signer: Signer, claim: Pick<ReceiptPayload, "trust_level"> & { serial?: string }, name = `r${newReceiptId()}.json`): string {
  const receipt = signReceipt(signer, receiptPayload(signer, content, claim));
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(savedBody(receipt, content)));
  return path;
}

const verify = (...args: string[]) => runCli("svc-agent", ["verify", ...args]);
const lastLine = (stdout: string) => stdout.trimEnd().split("\n").at(-1);
const forgedHardware = () => receiptFile(forger, { trust_level: "hardware", serial: "MADE-UP-SERIAL" });

describe("svc-agent verify: UNVERIFIED without trust input (exit 2)", () => {
  it("a receipt signed by a fresh key claiming hardware and a made-up serial is not VALID", async () => {
    const result = await verify(forgedHardware());
    expect(result.code, result.stdout + result.stderr).toBe(2);
    expect(lastLine(result.stdout)).toBe("UNVERIFIED: signature and hashes hold, but nothing ties the key to a provider you trust");
    expect(result.stdout).toContain("--    the key's owner not checked: pass --providers URL, --key HEX or --trust-on-first-use FILE");
    expect(result.stdout).not.toMatch(/^VALID/m);
  });
});

describe("svc-agent verify --providers URL: the listing's entry, rung and serial", () => {
  it("a receipt claiming hardware from a provider listed at process is INVALID (exit 1)", async () => {
    // the provider's own key, lying about its rung: a dishonest process-rung machine can sign anything
    providers = [{ id: providerIdOf(honest.publicKey), trust: "process" }];
    const result = await verify(receiptFile(honest, { trust_level: "hardware", serial: "MADE-UP-SERIAL" }), "--providers", listingUrl);
    expect(result.code, result.stdout + result.stderr).toBe(1);
    expect(result.stdout).toContain("FAIL  trust_level is hardware, expected process");
    expect(lastLine(result.stdout)).toMatch(/^INVALID: trust_level is hardware, expected process/);
  });

  it("the forged receipt of an unlisted key is INVALID (exit 1)", async () => {
    providers = [{ id: providerIdOf(honest.publicKey), trust: "hardware", serial: "C02REAL" }];
    const result = await verify(forgedHardware(), "--providers", `${listingUrl}/v1`);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`FAIL  provider ${providerIdOf(forger.publicKey)} is not listed by ${listingUrl}/v1/providers`);
  });

  it("a serial other than the listed one is INVALID; the listed rung and serial are VALID (exit 0)", async () => {
    providers = [{ id: providerIdOf(honest.publicKey), trust: "hardware", serial: "C02REAL" }];
    const [wrong, right] = await Promise.all([
      verify(receiptFile(honest, { trust_level: "hardware", serial: "C02FAKE" }), "--providers", listingUrl),
      verify(receiptFile(honest, { trust_level: "hardware", serial: "C02REAL" }), "--providers", listingUrl),
    ]);
    expect([wrong.code, wrong.stdout]).toEqual([1, expect.stringContaining("FAIL  serial is C02FAKE, expected C02REAL")]);
    expect(right.code, right.stdout).toBe(0);
    expect(lastLine(right.stdout)).toMatch(/^VALID: receipt rcpt_[0-9a-f]{24} signed by provider [0-9a-f]{64} at rung hardware for qwen3-4b$/);
  });

  it("a listing that cannot be read is exit 3, not a verdict", async () => {
    const result = await verify(forgedHardware(), "--providers", `${listingUrl}/elsewhere/v1/providers/x`);
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/^svc-agent: .* did not return a provider listing\n$/);
  });
});

// each test's verifier runs in its own process and reads its own files: those of one describe.concurrent run side by side
describe.concurrent("svc-agent verify --key HEX (and its old name --provider-key)", () => {
  it("the right key is VALID (exit 0), with the rung noted as the provider's own claim", async () => {
    const flags = ["--key", "--provider-key"];
    const results = await Promise.all(flags.map((flag) => verify(forgedHardware(), flag, forger.publicKey)));
    for (const [i, flag] of flags.entries()) {
      const result = results[i]!;
      expect(result.code, `${flag}: ${result.stdout}`).toBe(0);
      expect(result.stdout).toContain("--    trust_level hardware is the provider's own claim: only --providers holds it to a directory");
    }
  });

  it("another key is INVALID (exit 1)", async () => {
    const result = await verify(forgedHardware(), "--key", honest.publicKey);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`FAIL  the signing key is ${forger.publicKey}, expected ${honest.publicKey}`);
  });
});

describe("svc-agent verify --trust-on-first-use FILE", () => {
  const known = join(dir, "known-keys.json");

  it("first sight records the key for that provider and passes; the same key passes again", async () => {
    const first = await verify(receiptFile(honest, { trust_level: "hardware", serial: "C02TOFU" }), "--trust-on-first-use", known);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    expect(first.stdout).toContain(`ok    first sight of provider ${providerIdOf(honest.publicKey)}: key ${honest.publicKey} recorded in ${known}`);
    expect(statSync(known).mode & 0o777).toBe(0o600);
    const file = JSON.parse(readFileSync(known, "utf8")) as { providers: Record<string, { signing_key: string; serial?: string }> };
    expect(file.providers[providerIdOf(honest.publicKey)]).toMatchObject({ signing_key: honest.publicKey, serial: "C02TOFU" });
    const again = await verify(receiptFile(honest, { trust_level: "hardware", serial: "C02TOFU" }), "--trust-on-first-use", known);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`ok    the key is the one ${known} recorded for provider ${providerIdOf(honest.publicKey)}`);
  });

  it("a new key claiming a serial first seen with another key is INVALID (exit 1) and is not recorded", async () => {
    const before = readFileSync(known, "utf8");
    const result = await verify(receiptFile(forger, { trust_level: "hardware", serial: "C02TOFU" }), "--trust-on-first-use", known);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`FAIL  serial C02TOFU was first seen with provider ${providerIdOf(honest.publicKey)} (key ${honest.publicKey}), not this key`);
    expect(readFileSync(known, "utf8")).toBe(before);
  });

  // these three read files of their own, so they run side by side
  it.concurrent("a recorded provider whose key is not the recorded one is INVALID (exit 1)", async () => {
    const edited = join(dir, "edited-keys.json");
    const id = providerIdOf(honest.publicKey);
    writeFileSync(edited, JSON.stringify({ version: 1, providers: { [id]: { signing_key: forger.publicKey, first_seen: "2026-01-01T00:00:00.000Z" } } }));
    const result = await verify(receiptFile(honest, { trust_level: "process" }), "--trust-on-first-use", edited);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`FAIL  provider ${id} was first seen with key ${forger.publicKey}, but this receipt is signed by ${honest.publicKey}`);
  });

  it.concurrent("a receipt that fails a check records nothing", async () => {
    const fresh = join(dir, "fresh-keys.json");
    const path = receiptFile(forger, { trust_level: "process" });
    const tampered = readFileSync(path, "utf8").replace('"completion_tokens":3,"total_tokens":10', '"completion_tokens":4,"total_tokens":11');
    writeFileSync(path, tampered);
    const result = await verify(path, "--trust-on-first-use", fresh);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`first sight of provider ${providerIdOf(forger.publicKey)}: key ${forger.publicKey} not yet in ${fresh}`);
    expect(() => statSync(fresh)).toThrow(/ENOENT/);
  });

  it.concurrent("a file that is not a known-keys file is exit 3, naming it", async () => {
    const junk = join(dir, "junk.json");
    writeFileSync(junk, "[1]");
    const result = await verify(forgedHardware(), "--trust-on-first-use", junk);
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(new RegExp(`^svc-agent: ${junk}: not a known-keys file`));
  });
});

describe.concurrent("svc-agent verify reads only I-JSON (RFC 8259 §4, RFC 7493): a file two JSON readers could read differently is INVALID (exit 1)", () => {
  /** The honest answer under `--key`, written with `edit` applied to its JSON text, as bytes. */
  const doctored = (edit: (json: string) => string | Buffer): string => {
    const path = receiptFile(honest, { trust_level: "process" });
    const edited = edit(readFileSync(path, "utf8"));
    writeFileSync(path, edited);
    return path;
  };

  it("the untouched file is VALID; the same answer with the content's name given twice, the forged value first, is INVALID", async () => {
    const honestFile = doctored((json) => json);
    // a reader that keeps the first value (as many do) would show "Forged" under a receipt that holds
    const forged = doctored((json) => json.replace(`"content":"${content}"`, `"content":"Forged","content":"${content}"`));
    const receipt = doctored((json) => json.replace('"svc_receipt":', '"svc_receipt":{},"svc_receipt":'));
    const [untouched, result, twice] = await Promise.all([honestFile, forged, receipt].map((path) => verify(path, "--key", honest.publicKey)));
    expect(untouched!.code).toBe(0);
    expect([result!.code, result!.stdout]).toEqual([1, expect.stringContaining('INVALID: the file is not I-JSON (RFC 7493), so JSON readers could read it differently: the name "content" appears twice in one object')]);
    expect(twice!.stdout).toContain('the name "svc_receipt" appears twice in one object');
  });

  it("a byte order mark, bytes that are not UTF-8, a lone surrogate and a number beyond a double", async () => {
    const cases: [string, (json: string) => string | Buffer, string][] = [
      ["a byte order mark", (json) => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(json)]), "INVALID: the file starts with a byte order mark (U+FEFF), which RFC 8259 §8.1 forbids"],
      ["a byte that is not UTF-8", (json) => Buffer.concat([Buffer.from(json.slice(0, -1)), Buffer.from([0xff, 0x7d])]), "INVALID: the file is not UTF-8 (RFC 8259 §8.1)"],
      ["an escaped lone surrogate in an id", (json) => json.replace('"chatcmpl-saved"', '"chatcmpl-saved\\ud800"'), "INVALID: the file is not I-JSON (RFC 7493), so JSON readers could read it differently: a lone surrogate \\ud800"],
      ["a usage count JSON.parse reads as 7", (json) => json.replace('"prompt_tokens":7', '"prompt_tokens":7.00000000000000000001'), "is not exactly an IEEE 754 double"],
    ];
    const results = await Promise.all(cases.map(([, edit]) => verify(doctored(edit), "--key", honest.publicKey)));
    for (const [i, [what, , line]] of cases.entries()) {
      expect([what, results[i]!.code, results[i]!.stdout]).toEqual([what, 1, expect.stringContaining(line)]);
    }
  });

  it("the package's export in plain node: verifySavedResponse(decodeSavedBytes(file)) from 'svc-agent' refuses them too", async () => {
    const files = {
      honest: doctored((json) => json),
      duplicated: doctored((json) => json.replace('"svc_receipt":', '"svc_receipt":{},"svc_receipt":')),
      bom: doctored((json) => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(json)])),
    };
    const script = `
      import { readFileSync } from "node:fs";
      import { decodeSavedBytes, verifySavedResponse } from "svc-agent";
      const out = {};
      for (const [name, path] of Object.entries(JSON.parse(process.argv[1]))) {
        try { out[name] = verifySavedResponse(decodeSavedBytes(readFileSync(path)), { signingKey: process.argv[2] }).status; }
        catch (err) { out[name] = "refused: " + err.message; }
      }
      console.log(JSON.stringify(out));`;
    const run = await runNode(["--input-type=module", "-e", script, JSON.stringify(files), honest.publicKey], { cwd: new URL("../..", import.meta.url) });
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({
      honest: "valid",
      duplicated: expect.stringMatching(/^refused: the file is not I-JSON \(RFC 7493\), so JSON readers could read it differently: the name "svc_receipt" appears twice in one object/),
      bom: expect.stringMatching(/^refused: the file starts with a byte order mark/),
    });
    // index.d.ts declares it as implemented (checked by tsc in both directions)
    const declared: typeof PackageEntry.decodeSavedBytes = decodeSavedBytes;
    const implemented: typeof decodeSavedBytes = declared;
    expect(implemented).toBe(decodeSavedBytes);
  });

  it("a file that never ends is read only as far as the bound: INVALID, not an exhausted memory", async () => {
    const result = await verify("/dev/zero", "--key", honest.publicKey);
    expect([result.code, lastLine(result.stdout)]).toEqual([1, "INVALID: the file is larger than the 268435456 bytes the verifier reads"]);
  });
});

describe("svc-agent verify: usage errors exit 64, one line naming the flag", () => {
  it("a bad --key, an unknown flag and a missing file argument", async () => {
    const [bad, unknown, missing] = await Promise.all([verify(forgedHardware(), "--key", "zz"), verify(forgedHardware(), "--bogus"), verify()]);
    expect([bad.code, bad.stderr]).toEqual([64, "svc-agent: option '--key <hex>' argument 'zz' is invalid. expected 64 lowercase hex characters; see --help\n"]);
    expect([unknown.code, unknown.stderr]).toEqual([64, "svc-agent: unknown option '--bogus'; see --help\n"]);
    expect([missing.code, missing.stderr]).toEqual([64, "svc-agent: missing required argument 'file'; see --help\n"]);
  });
});
