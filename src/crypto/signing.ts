// Signing with Ed25519 over domain-separated canonical JSON, on node's native Ed25519 (the agent, release keys,
// tests). Checking signatures is src/receipt/signature.ts, which runs in browsers too; it is re-exported here.
import * as nodeCrypto from "node:crypto";
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import { signedMessage, type SignatureDomain } from "../receipt/signature.ts";
import { nativeSignatureCheck } from "./native-ed25519.ts";

export { SIGNATURE_DOMAINS, signedMessage, verifySignature, type SignatureDomain } from "../receipt/signature.ts";

// DER headers that turn a raw 32-byte Ed25519 seed / public key into PKCS#8 / SPKI (RFC 8410), which is
// how node's crypto imports raw keys
const PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");
const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

export class Signer {
  /** Raw Ed25519 public key, lowercase hex. */
  readonly publicKey: string;

  private constructor(private readonly key: KeyObject) {
    const spki = createPublicKey(key).export({ format: "der", type: "spki" });
    this.publicKey = spki.subarray(SPKI_PREFIX.length).toString("hex");
  }

  static fromSeed(seed: Uint8Array): Signer {
    return new Signer(createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: "der", type: "pkcs8" }));
  }

  static fromPem(pem: string): Signer {
    const key = createPrivateKey(pem);
    if (key.asymmetricKeyType !== "ed25519") throw new Error("expected an Ed25519 private key");
    return new Signer(key);
  }

  static generatePem(): string {
    // encoded by the generator itself: exporting a generated key can deadlock node 20 (see src/crypto/hpke-node.ts)
    return generateKeyPairSync("ed25519", { privateKeyEncoding: { format: "pem", type: "pkcs8" }, publicKeyEncoding: { format: "pem", type: "spki" } }).privateKey;
  }

  /** Lowercase hex signature over the domain-separated canonical form of `payload`. */
  sign(domain: SignatureDomain, payload: unknown): string {
    return sign(null, signedMessage(domain, payload), this.key).toString("hex");
  }
}

/**
 * src/receipt/signature.ts's `verifySignature` on this process's native Ed25519 (src/crypto/native-ed25519.ts), for the
 * gateway, which checks a receipt on every request. Never throws.
 */
export const verifySignatureNative = nativeSignatureCheck(nodeCrypto, Buffer);
