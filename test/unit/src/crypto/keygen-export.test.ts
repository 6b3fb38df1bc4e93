// Node 20 can hang for good when a key made by generateKeyPairSync is exported: the export holds the key's lock
// while it allocates, and if that allocation runs the GC that frees the generator's job, the job's destructor
// waits on the same lock (seen here: a tight loop of seals hung about 1 run in 6). Whether the GC lands there is
// chance, so this file checks the rule that rules it out: every key node's generator hands us is marked, and
// exporting a marked key fails the test. Sealing and key generation must never do it.
import type { KeyObject } from "node:crypto";
import { describe, expect, it, vi } from "vitest";

const fromGenerator = vi.hoisted(() => new WeakSet<object>());

vi.mock("node:crypto", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:crypto")>();
  const generateKeyPairSync = (...args: unknown[]) => {
    const pair = (real.generateKeyPairSync as (...a: unknown[]) => { publicKey: unknown; privateKey: unknown })(...args);
    for (const key of [pair.publicKey, pair.privateKey]) if (key instanceof real.KeyObject) fromGenerator.add(key);
    return pair;
  };
  // public and private key objects each have their own `export` (their classes override KeyObject's)
  const sample = real.generateKeyPairSync("x25519");
  for (const proto of new Set([Object.getPrototypeOf(sample.publicKey), Object.getPrototypeOf(sample.privateKey)]) as Set<KeyObject>) {
    const exportKey = proto.export;
    proto.export = function (this: KeyObject, ...options: unknown[]) {
      if (fromGenerator.has(this)) throw new Error("a key from generateKeyPairSync was exported");
      return (exportKey as (...a: unknown[]) => unknown).apply(this, options);
    } as typeof exportKey;
  }
  return { ...real, default: { ...real, generateKeyPairSync }, generateKeyPairSync };
});

const { generateKeyPairSync } = await import("node:crypto");
const { openRequest, sealingKeyPair, sealRequest } = await import("../../../../src/crypto/seal.ts");
const { nodeDhkemX25519 } = await import("../../../../src/crypto/hpke-node.ts");
const { Signer } = await import("../../../../src/crypto/signing.ts");

describe("DESIGN §5 Sealed sessions: no generated key is exported (a node 20 deadlock)", () => {
  it("the check itself: exporting a key straight from generateKeyPairSync fails", () => {
    expect(() => generateKeyPairSync("x25519").publicKey.export({ format: "jwk" })).toThrow(/was exported/);
  });

  it("an ephemeral X25519 key pair is generated and its public half serialized without exporting a generated key", async () => {
    const kem = nodeDhkemX25519();
    const pair = await kem.generateKeyPair();
    expect(Buffer.from(await kem.serializePublicKey(pair.publicKey))).toHaveLength(32);
  });

  it("a request is sealed and opened, and the answer's frames go both ways, without exporting a generated key", async () => {
    const own = await sealingKeyPair(new Uint8Array(32).fill(7));
    const { sealed, frames } = await sealRequest(own.publicKey, "s_keygen_export_1", new TextEncoder().encode("a prompt"));
    const opened = await openRequest(own, "s_keygen_export_1", sealed);
    expect(opened.plaintext.toString()).toBe("a prompt");
    expect(frames.open(opened.frames.seal("a token"))).toBe("a token");
  });

  it("a new Ed25519 signing key comes out as PKCS#8 PEM without exporting a generated key", () => {
    const pem = Signer.generatePem();
    expect(pem).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    expect(Signer.fromPem(pem).publicKey).toMatch(/^[0-9a-f]{64}$/);
  });
});
