// DESIGN §5 sealing runs RFC 9180 through @hpke/core with node:crypto's X25519 and HMAC underneath. These
// check it against @hpke's own pure-JS DHKEM, byte for byte: same keys from the same seed, and each side
// opens what the other sealed, with the same exported secret.
import { Chacha20Poly1305 } from "@hpke/chacha20poly1305";
import { CipherSuite, HkdfSha256 } from "@hpke/core";
import { DhkemX25519HkdfSha256 } from "@hpke/dhkem-x25519";
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { nodeDhkemX25519, NodeHkdfSha256 } from "../../../../src/crypto/hpke-node.ts";

const stock = new CipherSuite({ kem: new DhkemX25519HkdfSha256(), kdf: new HkdfSha256(), aead: new Chacha20Poly1305() });
const native = new CipherSuite({ kem: nodeDhkemX25519(), kdf: new NodeHkdfSha256(), aead: new Chacha20Poly1305() });
const info = new TextEncoder().encode("svc-session/v1").buffer as ArrayBuffer;
const aad = new TextEncoder().encode("aad").buffer as ArrayBuffer;
const buffer = (b: Buffer) => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
const hex = (b: ArrayBuffer) => Buffer.from(b).toString("hex");

describe("DESIGN §5 Sealed sessions: node:crypto primitives under @hpke/core", () => {
  it("derives the same X25519 key pair from a seed as @hpke/dhkem-x25519 (RFC 9180 DeriveKeyPair)", async () => {
    for (let i = 0; i < 5; i++) {
      const seed = buffer(randomBytes(32));
      const a = await stock.kem.deriveKeyPair(seed);
      const b = await native.kem.deriveKeyPair(seed);
      expect(hex(await native.kem.serializePublicKey(b.publicKey))).toBe(hex(await stock.kem.serializePublicKey(a.publicKey)));
      expect(hex(await native.kem.serializePrivateKey(b.privateKey))).toBe(hex(await stock.kem.serializePrivateKey(a.privateKey)));
    }
  });

  it("each side opens what the other sealed, and both export the same frame key", async () => {
    const seed = buffer(randomBytes(32));
    const pairs = { stock: await stock.kem.deriveKeyPair(seed), native: await native.kem.deriveKeyPair(seed) };
    const plaintext = buffer(Buffer.from("a sealed prompt"));
    for (const [sender, recipient, recipientKey] of [
      [native, stock, pairs.stock],
      [stock, native, pairs.native],
    ] as const) {
      const publicKey = await sender.kem.deserializePublicKey(await recipient.kem.serializePublicKey(recipientKey.publicKey));
      const ctx = await sender.createSenderContext({ recipientPublicKey: publicKey, info });
      const ct = await ctx.seal(plaintext, aad);
      const opened = await recipient.createRecipientContext({ recipientKey, enc: ctx.enc, info });
      expect(Buffer.from(await opened.open(ct, aad)).toString()).toBe("a sealed prompt");
      expect(hex(await opened.export(info, 32))).toBe(hex(await ctx.export(info, 32)));
    }
  });

  it("refuses a small-order public key whose shared secret is all zeros (RFC 9180 §7.1.4)", async () => {
    const zero = await native.kem.deserializePublicKey(new ArrayBuffer(32));
    await expect(native.createSenderContext({ recipientPublicKey: zero, info })).rejects.toThrow();
  });
});
