// `svc-agent verify --audit FILE --model PATH` (issue 43 item 4; AUDIT-DESIGN §5): anyone with the pinned GGUF
// re-checks an audit's evidence without trusting the auditor. On the tiny model: a provider serving another seed's
// weights under the pinned name leaves failing evidence that reproduces "fail"; a file changed after signing is
// unsound; an auditor who signs a verdict its own reference pass got wrong is not reproduced; a model file that is not
// the audit's cannot check.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../harness/cli.ts";
import { answerRecord, type AuditEvidence } from "../../src/audit/evidence.ts";
import { logprobsSha256 } from "../../src/receipt/logprobs.ts";
import { payloadOf, signReceipt, type ReceiptPayload } from "../../src/receipt/receipt.ts";
import { Signer } from "../../src/crypto/signing.ts";
import { answer, evidenceOf, type Answered, pinnedFile, reference, sessionPlaintext } from "../fixtures/audited-answer.ts";
import { makeTinyCatalog } from "../fixtures/tiny-catalog.ts";

const pinned = makeTinyCatalog([{ alias: "qwen3-4b", seed: 3 }]);
const otherSeed = makeTinyCatalog([{ alias: "qwen3-4b", seed: 4 }]);
const dir = mkdtempSync(join(tmpdir(), "svc-audit-"));
const provider = Signer.fromSeed(new Uint8Array(32).fill(0x31));
const auditor = Signer.fromSeed(new Uint8Array(32).fill(0x41));
const plaintext = sessionPlaintext();

/** Failing evidence against a provider whose engine ran another seed's weights; and evidence an auditor got wrong. */
let failing: AuditEvidence;
let framed: AuditEvidence;
/** An honest provider's answer on the pinned weights. */
let honest: Answered;
beforeAll(async () => {
  const cheat = await answer(otherSeed, pinned, plaintext, provider);
  failing = evidenceOf(pinned, plaintext, cheat, await reference(pinnedFile(pinned), plaintext, cheat), auditor);
  // an honest provider's answer, "re-scored" on the wrong weights: a fail the pinned GGUF does not reproduce
  honest = await answer(pinned, pinned, plaintext, provider);
  framed = evidenceOf(pinned, plaintext, honest, await reference(pinnedFile(otherSeed), plaintext, honest), auditor);
});
afterAll(() => {
  pinned.cleanup();
  otherSeed.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

const write = (name: string, evidence: unknown) => {
  const path = join(dir, name);
  writeFileSync(path, typeof evidence === "string" ? evidence : JSON.stringify(evidence, null, 2));
  return path;
};
const verifyAudit = (file: string, ...args: string[]) => runCli("svc-agent", ["verify", "--audit", file, "--model", pinnedFile(pinned), ...args]);
const lastLine = (stdout: string) => stdout.trimEnd().split("\n").at(-1);

// a test's runs that do not depend on one another are processes side by side
describe("svc-agent verify --audit: a failed audit re-checked with the pinned GGUF", () => {
  it("the substitute's evidence is sound and reproduces fail, bit for bit on the same build and settings (exit 0)", async () => {
    expect(failing.verdict).toBe("fail");
    const file = write("failing.json", failing);
    const result = await verifyAudit(file, "--auditor-key", auditor.publicKey);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).not.toMatch(/^ {2}FAIL/m);
    expect(result.stdout).toContain(`  ok    the auditor's Ed25519 signature by ${auditor.publicKey} verifies`);
    expect(result.stdout).toContain(`  ok    receipt: Ed25519 signature by ${provider.publicKey} verifies`);
    expect(result.stdout).toContain("  ok    receipt: logprobs_sha256 (SHA-256 of every token's logprobs) is");
    expect(result.stdout).toContain(`  ok    ${pinnedFile(pinned)} is qwen3-4b's pinned GGUF (sha256 ${failing.model.sha256})`);
    expect(result.stdout).toMatch(/^ {2}ok {4}the answer's \d+ token ids make its content, reasoning and tool calls on this build's answer path, as the receipt's hashes say$/m);
    expect(result.stdout).toContain("  --    max |stored - recomputed reference| 0\n");
    expect(result.stdout).toContain(`  --    mean |claimed - reference| ${failing.statistic.mean},`);
    expect(lastLine(result.stdout)).toMatch(new RegExp(`^REPRODUCED: fail: audit ${failing.id} of provider ${failing.provider.id} \\(evidence sha256 [0-9a-f]{64}\\)$`));
  });

  it("without --auditor-key the auditor is shown, not trusted; another auditor key is unsound (exit 1)", async () => {
    const file = write("failing-keys.json", failing);
    const [shown, other] = await Promise.all([verifyAudit(file), verifyAudit(file, "--auditor-key", provider.publicKey)]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`  --    the auditor's key ${auditor.publicKey} is not held to one you trust: pass --auditor-key HEX`);
    expect(other.code).toBe(1);
    expect(lastLine(other.stdout)).toBe(`UNSOUND: the auditor's key is ${auditor.publicKey}, expected ${provider.publicKey}`);
  });
});

describe("svc-agent verify --audit: what does not hold", () => {
  it("a file changed after signing (one logprob) is unsound before any model runs (exit 1)", async () => {
    const tampered = structuredClone(failing);
    const piece = tampered.answer.find((p) => p.type === "logprobs")!;
    piece.logprobs[0]!.logprob -= 0.5;
    const result = await verifyAudit(write("tampered.json", tampered));
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`  FAIL  the auditor's signature does not verify under ${auditor.publicKey}`);
    expect(result.stdout).toMatch(/^ {2}FAIL {2}receipt: logprobs_sha256 \(SHA-256 of every token's logprobs\) is [0-9a-f]{64}, expected /m);
    expect(result.stdout).not.toContain("re-scored");
    expect(lastLine(result.stdout)).toMatch(/^UNSOUND: /);
  });

  it("a fail its auditor signed from the wrong reference does not reproduce on the pinned GGUF (exit 1)", async () => {
    expect(framed.verdict).toBe("fail");
    const result = await verifyAudit(write("framed.json", framed), "--auditor-key", auditor.publicKey);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^ {2}FAIL {2}the file says fail, the re-check gives pass \(mean /m);
    expect(lastLine(result.stdout)).toBe("NOT REPRODUCED: the file says fail, the re-check gives pass");
  });

  it("token ids the provider signed that do not make the answer its receipt covers are unsound (exit 1)", async () => {
    // the provider's own lie: its first entry names another token than the one its text was made of, all signed
    const pieces = structuredClone(honest.pieces);
    const first = pieces.find((p) => p.type === "logprobs")!.logprobs;
    first[0] = { ...first[0]!, id: (first[0]!.id + 1) % 256 };
    const record = answerRecord(pieces);
    const receipt = signReceipt(provider, { ...payloadOf(honest.receipt), logprobs_sha256: logprobsSha256(record.logprobs), content_logprobs_sha256: logprobsSha256(record.contentLogprobs) } as ReceiptPayload);
    const lying = { ...honest, pieces, entries: record.logprobs, receipt };
    const evidence = evidenceOf(pinned, plaintext, lying, await reference(pinnedFile(pinned), plaintext, lying), auditor);
    const result = await verifyAudit(write("ids.json", evidence), "--auditor-key", auditor.publicKey);
    expect(result.code, result.stdout).toBe(1);
    expect(result.stdout).toContain("  ok    receipt: logprobs_sha256 (SHA-256 of every token's logprobs) is");
    expect(result.stdout).toMatch(/^ {2}FAIL {2}the answer's token ids do not make the answer its receipt covers: response_sha256/m);
    expect(lastLine(result.stdout)).toMatch(/^UNSOUND: the answer's token ids do not make the answer its receipt covers \(response_sha256/);
  });

  it("a file that is not evidence is unsound; a model file that is not the audit's, or no --model, cannot check", async () => {
    const file = write("failing-model.json", failing);
    const [junk, wrong, none] = await Promise.all([
      verifyAudit(write("junk.json", '{"svc_audit":1}')),
      runCli("svc-agent", ["verify", "--audit", file, "--model", pinnedFile(otherSeed)]),
      runCli("svc-agent", ["verify", "--audit", file]),
    ]);
    expect([junk.code, lastLine(junk.stdout)]).toEqual([1, "UNSOUND: not audit evidence: id: Invalid input: expected string, received undefined"]);
    expect(wrong.code).toBe(3);
    expect(wrong.stderr.trim()).toBe(`svc-agent: --model ${pinnedFile(otherSeed)} has sha256 ${otherSeed.catalog.models[0]!.sha256}, but the audit names qwen3-4b at ${failing.model.sha256}`);
    expect([none.code, none.stderr.trim()]).toEqual([64, "svc-agent: --audit needs --model PATH, your copy of the GGUF the audit names; see --help"]);
    expect(readFileSync(file, "utf8")).toBe(JSON.stringify(failing, null, 2));
  });
});

describe("svc-agent verify --trust-on-first-use FILE: version 2 carries failed audits", () => {
  const receiptOnly = () => write(`receipt-${Math.random().toString(36).slice(2)}.json`, failing.receipt);

  it("a fail that reproduces is recorded against the provider; its receipts are then INVALID by audit_record (exit 1)", async () => {
    const known = join(dir, "known-v2.json");
    const [before, audit] = await Promise.all([
      runCli("svc-agent", ["verify", receiptOnly(), "--trust-on-first-use", join(dir, "known-before.json")]),
      verifyAudit(write("failing-tofu.json", failing), "--trust-on-first-use", known),
    ]);
    expect(before.code, before.stdout).toBe(0);
    expect(before.stdout).toContain(`  ok    no failed audit of provider ${failing.provider.id} is recorded in ${join(dir, "known-before.json")}`);

    expect(audit.code, audit.stdout + audit.stderr).toBe(0);
    expect(audit.stdout).toContain(`  ok    the failed audit is recorded against provider ${failing.provider.id} in ${known}`);
    const file = JSON.parse(readFileSync(known, "utf8")) as { version: number; providers: Record<string, { signing_key: string; audit_failures: { evidence_sha256: string; auditor_key: string; at: string }[] }> };
    const sha = /evidence sha256 ([0-9a-f]{64})/.exec(audit.stdout)![1]!;
    expect(file.version).toBe(2);
    expect(file.providers[failing.provider.id]).toMatchObject({
      signing_key: provider.publicKey,
      audit_failures: [{ evidence_sha256: sha, auditor_key: auditor.publicKey, at: new Date(failing.created * 1000).toISOString() }],
    });
    const again = await verifyAudit(write("failing-tofu-2.json", failing), "--trust-on-first-use", known);
    expect(again.stdout).toContain("was recorded already");
    expect((JSON.parse(readFileSync(known, "utf8")) as typeof file).providers[failing.provider.id]!.audit_failures).toHaveLength(1);

    const after = await runCli("svc-agent", ["verify", receiptOnly(), "--trust-on-first-use", known]);
    expect(after.code).toBe(1);
    expect(after.stdout).toContain(`  ok    the key is the one ${known} recorded for provider ${failing.provider.id}`);
    expect(after.stdout).toContain(`  FAIL  provider ${failing.provider.id} failed an audit recorded in ${known}: evidence sha256 ${sha} by auditor ${auditor.publicKey} at `);
    expect(lastLine(after.stdout)).toMatch(/^INVALID: provider [0-9a-f]{64} failed an audit recorded in /);
  });

  it("a fail that does not reproduce records nothing; a version 1 file still reads", async () => {
    const known = join(dir, "known-framed.json");
    const v1 = join(dir, "known-v1.json");
    writeFileSync(v1, JSON.stringify({ version: 1, providers: { [failing.provider.id]: { signing_key: provider.publicKey, first_seen: "2026-01-01T00:00:00.000Z" } } }));
    const [result, read] = await Promise.all([
      verifyAudit(write("framed-tofu.json", framed), "--trust-on-first-use", known),
      runCli("svc-agent", ["verify", receiptOnly(), "--trust-on-first-use", v1]),
    ]);
    expect(result.code).toBe(1);
    expect(() => readFileSync(known)).toThrow(/ENOENT/);
    expect(read.code, read.stdout + read.stderr).toBe(0);
    expect(read.stdout).toContain(`  ok    the key is the one ${v1} recorded for provider ${failing.provider.id} on 2026-01-01T00:00:00.000Z`);
  });
});
