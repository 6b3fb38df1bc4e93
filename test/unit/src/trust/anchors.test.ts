// The trust anchors from text (src/trust/anchors.ts), as a caller's client takes them: PEM roots and hex release keys
// become the very anchors the operator's files give (anchor-files.ts), and a string that is not one is refused by name.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadKeyList, loadRoots } from "../../../../src/trust/anchor-files.ts";
import { anchorsFrom } from "../../../../src/trust/anchors.ts";
import { makeTestCa, type TestCa } from "../../../fixtures/test-ca.ts";

let dir: string;
let ca: TestCa;
let other: TestCa;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "svc-anchors-"));
  ca = await makeTestCa(join(dir, "a"));
  other = await makeTestCa(join(dir, "b"), "Other Root");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const pemOf = (c: TestCa) => readFileSync(join(c.rootsDir, "root.pem"), "utf8");
const pems = (certs: readonly { toString(format: "pem"): string }[]) => certs.map((c) => c.toString("pem"));
const KEY = "ab".repeat(32);

describe("DESIGN §4 trust anchors: the caller's own, as strings", () => {
  it("PEM roots give the same roots as --attestation-roots DIR; one text may hold several", () => {
    expect(pems(anchorsFrom({ roots: [pemOf(ca)] }).roots)).toEqual(pems(loadRoots(ca.rootsDir)));
    expect(pems(anchorsFrom({ roots: [`${pemOf(ca)}\n${pemOf(other)}`] }).roots)).toEqual([...pems(loadRoots(ca.rootsDir)), ...pems(loadRoots(other.rootsDir))]);
  });

  it("release keys give the same set as --release-keys FILE", () => {
    const file = join(dir, "keys.txt");
    writeFileSync(file, `# release\n${KEY}\n${"cd".repeat(32)} # next\n`);
    expect(anchorsFrom({ releaseKeys: [KEY, "cd".repeat(32)] }).releaseKeys).toEqual(loadKeyList(file));
    expect(anchorsFrom({}).releaseKeys).toEqual(new Set());
  });

  it("a string that is not an anchor is refused, naming which", () => {
    expect(() => anchorsFrom({ roots: [pemOf(ca), "not a certificate"] })).toThrow("trustedRoots[1] holds no PEM certificate");
    expect(() => anchorsFrom({ roots: ["-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----"] })).toThrow(/^trustedRoots\[0\] holds a certificate that does not parse/);
    expect(() => anchorsFrom({ releaseKeys: [KEY, "AB".repeat(32)] })).toThrow("releaseKeys[1]:1: expected a 64-hex-character Ed25519 public key");
  });
});
