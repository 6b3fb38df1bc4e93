// Ed25519 signatures over domain-separated canonical JSON: `"<domain>\0" || JCS(payload)`, so no signed
// thing of ours (attestation evidence, release manifest, receipt) can be replayed as another kind.
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from "node:crypto";
import { canonicalJson } from "./canonical-json.ts";
import { Hex32, Hex64 } from "./hex.ts";

// DER headers that turn a raw 32-byte Ed25519 seed / public key into PKCS#8 / SPKI (RFC 8410), which is
// how node's crypto imports raw keys
const PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");
const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

export const SIGNATURE_DOMAINS = {
  attestation: "svc-attest/v1",
  release: "svc-release/v1",
  receipt: "svc-receipt/v1",
} as const;
export type SignatureDomain = (typeof SIGNATURE_DOMAINS)[keyof typeof SIGNATURE_DOMAINS];

export function signedMessage(domain: SignatureDomain, payload: unknown): Buffer {
  return Buffer.concat([Buffer.from(`${domain}\0`), Buffer.from(canonicalJson(payload))]);
}

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
    return generateKeyPairSync("ed25519").privateKey.export({ format: "pem", type: "pkcs8" }).toString();
  }

  /** Lowercase hex signature over the domain-separated canonical form of `payload`. */
  sign(domain: SignatureDomain, payload: unknown): string {
    return sign(null, signedMessage(domain, payload), this.key).toString("hex");
  }
}

// importing a raw key costs as much as the verification itself, and a gateway sees the same few providers'
// keys over and over; the bound keeps a stream of fresh keys from growing it without end
const publicKeys = new Map<string, KeyObject>();
const MAX_CACHED_KEYS = 4096;

function publicKeyObject(publicKeyHex: string): KeyObject {
  let key = publicKeys.get(publicKeyHex);
  if (!key) {
    key = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, Buffer.from(publicKeyHex, "hex")]), format: "der", type: "spki" });
    if (publicKeys.size >= MAX_CACHED_KEYS) publicKeys.clear();
    publicKeys.set(publicKeyHex, key);
  }
  return key;
}

/** False for any signature, key or payload that does not check out; never throws on malformed hex. */
export function verifySignature(publicKeyHex: string, domain: SignatureDomain, payload: unknown, signatureHex: string): boolean {
  if (!Hex32.safeParse(publicKeyHex).success || !Hex64.safeParse(signatureHex).success) return false;
  try {
    return verify(null, signedMessage(domain, payload), publicKeyObject(publicKeyHex), Buffer.from(signatureHex, "hex"));
  } catch {
    return false;
  }
}
