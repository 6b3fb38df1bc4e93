// `svc-agent verify RECEIPT --providers URL` against a listing whose gateway audits its providers (issue 43 item 4,
// docs/verifying.md): a provider the listing shows with a failed audit fails the check `listed_audits`, INVALID
// whatever its receipt says; one with none passes it. A stub listing on loopback, the verifier in process.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyFile } from "../../../../agent/verify/command.ts";
import { providerIdOf } from "../../../../src/receipt/provider-id.ts";
import { signReceipt } from "../../../../src/receipt/receipt.ts";
import { receiptPayload } from "../../../fixtures/receipt-payload.ts";
import { savedBody, savedKey } from "../../../fixtures/saved-answer.ts";

const dir = mkdtempSync(join(tmpdir(), "svc-listed-audits-"));
const id = providerIdOf(savedKey.publicKey);
let listing: Server;
let url = "";
/** What the stub gateway lists at /v1/providers. */
let providers: unknown[] = [];

beforeAll(async () => {
  listing = createServer((_req, res) => res.end(JSON.stringify(providers)));
  await new Promise<void>((resolve) => listing.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(listing.address() as AddressInfo).port}/v1/providers`;
});
afterAll(async () => {
  await new Promise((resolve) => listing.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

const content = "Hello";
const file = join(dir, "answer.json");
writeFileSync(file, JSON.stringify(savedBody(signReceipt(savedKey, receiptPayload(savedKey, content)), content)));

async function verify(): Promise<{ status: string; lines: string[] }> {
  const lines: string[] = [];
  const status = await verifyFile(file, { providers: url }, (line) => lines.push(line));
  return { status, lines };
}

describe("svc-agent verify --providers URL: the listing's audit record", () => {
  it("a provider listed with a failed audit is INVALID, the audit named", async () => {
    providers = [{ id, trust: "process", audits: { passed: 4, failed: 1, last: { id: "aud_0123", at: 1_795_305_600, verdict: "fail" } }, in_rotation: false }];
    const { status, lines } = await verify();
    expect(status).toBe("invalid");
    expect(lines).toContain(`  FAIL  ${url} shows a failed audit of provider ${id} (the last aud_0123 at 2026-11-22T00:00:00.000Z)`);
    expect(lines.at(-1)).toBe(`INVALID: ${url} shows a failed audit of provider ${id} (the last aud_0123 at 2026-11-22T00:00:00.000Z)`);
  });

  it("a provider listed with audits and no failure passes the check, and is VALID", async () => {
    providers = [{ id, trust: "process", audits: { passed: 4, failed: 0, last: { id: "aud_4567", at: 1_795_305_600, verdict: "pass" } }, in_rotation: true }];
    const { status, lines } = await verify();
    expect(lines).toContain(`  ok    ${url} shows no failed audit of provider ${id}`);
    expect(status).toBe("valid");
  });

  it("a failure an operator cleared (barring 0, back in rotation) no longer fails the check: VALID", async () => {
    providers = [{ id, trust: "process", audits: { passed: 4, failed: 1, suspect: 0, barring: 0, last: { id: "aud_0123", at: 1_795_305_600, verdict: "fail" } }, in_rotation: true }];
    const { status, lines } = await verify();
    expect(lines).toContain(`  ok    ${url} shows no failed audit of provider ${id} that still bars it (1 cleared by an operator)`);
    expect(status).toBe("valid");
  });

  it("of two failures one cleared, the other still bars: INVALID, counting the one", async () => {
    providers = [{ id, trust: "process", audits: { passed: 4, failed: 2, suspect: 0, barring: 1, last: { id: "aud_0123", at: 1_795_305_600, verdict: "fail" } }, in_rotation: false }];
    const { status, lines } = await verify();
    expect(lines).toContain(`  FAIL  ${url} shows a failed audit of provider ${id} (the last aud_0123 at 2026-11-22T00:00:00.000Z)`);
    expect(status).toBe("invalid");
  });

  it("a provider listed out of rotation with no failure the store shows yet (the gateway's own bar) is INVALID", async () => {
    providers = [{ id, trust: "process", audits: { passed: 4, failed: 1, suspect: 0, barring: 0, last: { id: "aud_0123", at: 1_795_305_600, verdict: "fail" } }, in_rotation: false }];
    const { status, lines } = await verify();
    expect(lines).toContain(`  FAIL  ${url} shows provider ${id} out of rotation (the last aud_0123 at 2026-11-22T00:00:00.000Z)`);
    expect(status).toBe("invalid");
  });

  it("a listing without audit records (a gateway that does not audit) adds no check", async () => {
    providers = [{ id, trust: "process" }];
    const { status, lines } = await verify();
    expect(lines.filter((line) => line.includes("failed audit"))).toEqual([]);
    expect(status).toBe("valid");
  });

  it("an audit record that is not one makes the listing unreadable: no verdict", async () => {
    providers = [{ id, trust: "process", audits: { failed: -1 } }];
    await expect(verify()).rejects.toThrow(`${url} did not return a provider listing`);
  });
});
