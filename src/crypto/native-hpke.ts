// node:crypto's primitives for @hpke/core's DHKEM(X25519, HKDF-SHA256): X25519 from OpenSSL and HKDF from synchronous
// HMAC, built on whichever node:crypto the caller hands in, so the client package takes them from node, Deno or Bun at
// run time and its browser bundle never imports node:crypto. @hpke/core still runs RFC 9180 itself (encap/decap, key
// schedule, export); only the arithmetic moves. The stock pure-JS X25519 and the asynchronous WebCrypto HMAC cost
// about 2.4 ms to seal and 1.6 ms to open a request (measured by `npm run bench`); these take well under 0.2.
import { Dhkem, KemId, type DhkemPrimitives, type KemInterface } from "@hpke/common";
import { HkdfSha256 } from "@hpke/core";
import type * as NodeCrypto from "node:crypto";
import type { JsonWebKey, KeyObject, webcrypto } from "node:crypto";
import { Kept } from "../receipt/kept.ts";

/** The part of node:crypto these primitives use. */
export type HpkeCrypto = Pick<typeof NodeCrypto, "createHmac" | "createPrivateKey" | "createPublicKey" | "diffieHellman" | "generateKeyPairSync">;

/**
 * The KEM and KDF on `crypto`: `kem()` a fresh DHKEM(X25519, HKDF-SHA256), `Hkdf` the suite's HKDF-SHA256. `Buffer`
 * comes with it (node:buffer's), since not every runtime that has node:crypto makes Buffer a global.
 */
export function nativeHpke(
  { createHmac, createPrivateKey, createPublicKey, diffieHellman, generateKeyPairSync }: HpkeCrypto,
  Buffer: typeof globalThis.Buffer,
): { kem: () => KemInterface; Hkdf: new () => HkdfSha256 } {
  // RFC 9180 §7.1.3 labels (the same bytes @hpke/common uses)
  const LABEL_DKP_PRK = new TextEncoder().encode("dkp_prk");
  const LABEL_SK = new TextEncoder().encode("sk");
  const EMPTY = new Uint8Array(0);
  const HASH_BYTES = 32;

  type Bytes = ArrayBufferLike | ArrayBufferView;
  const bytesOf = (data: Bytes): Buffer =>
    ArrayBuffer.isView(data) ? Buffer.from(data.buffer, data.byteOffset, data.byteLength) : Buffer.from(data);
  const arrayBufferOf = (data: Buffer): ArrayBuffer => data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer;

  /** HKDF-SHA256 (RFC 5869) on node:crypto's HMAC, in place of WebCrypto's asynchronous one. */
  class NodeHkdfSha256 extends HkdfSha256 {
    override async extract(salt: Bytes, ikm: Bytes): Promise<ArrayBuffer> {
      const key = salt.byteLength === 0 ? Buffer.alloc(HASH_BYTES) : bytesOf(salt);
      return Promise.resolve(arrayBufferOf(createHmac("sha256", key).update(bytesOf(ikm)).digest()));
    }

    override async extractAndExpand(salt: Bytes, ikm: Bytes, info: Bytes, len: number): Promise<ArrayBuffer> {
      return this.expand(await this.extract(salt, ikm), info, len);
    }

    override async expand(prk: Bytes, info: Bytes, len: number): Promise<ArrayBuffer> {
      if (len > 255 * HASH_BYTES) throw new Error("HKDF: too much output requested");
      const blocks: Buffer[] = [];
      let previous = Buffer.alloc(0);
      for (let i = 1; blocks.length * HASH_BYTES < len; i++) {
        previous = createHmac("sha256", bytesOf(prk)).update(previous).update(bytesOf(info)).update(Buffer.of(i)).digest();
        blocks.push(previous);
      }
      return Promise.resolve(arrayBufferOf(Buffer.concat(blocks).subarray(0, len)));
    }
  }

  /** What @hpke/core holds as a key: a node KeyObject in CryptoKey's clothing (it only hands keys back to us). */
  type Key = webcrypto.CryptoKey;
  type KeyPair = webcrypto.CryptoKeyPair;
  const keyObject = (key: Key): KeyObject => key as unknown as KeyObject;
  const asKey = (key: KeyObject): Key => key as unknown as Key;

  /** Public keys imported lately: a gateway seals to the same few providers' keys on every request. */
  const PUBLIC_KEYS = new Kept(1024, (x) => createPublicKey({ key: { kty: "OKP", crv: "X25519", x }, format: "jwk" }));

  function fromRaw(raw: Buffer, isPublic: boolean): Key {
    if (raw.length !== 32) throw new Error(`X25519 keys are 32 bytes, not ${raw.length}`);
    const x = raw.toString("base64url");
    if (isPublic) return asKey(PUBLIC_KEYS.get(x));
    // a JWK private key needs its public half; OpenSSL derives it from the raw scalar through PKCS#8 instead
    const pkcs8 = Buffer.concat([Buffer.from("302e020100300506032b656e04220420", "hex"), raw]);
    return asKey(createPrivateKey({ key: pkcs8, format: "der", type: "pkcs8" }));
  }

  /**
   * Node 20's key generator (a crypto job) shares a lock with the keys it makes, and its destructor takes that lock
   * when the GC frees the job. Exporting such a key holds the lock while it allocates; if that allocation starts the
   * GC that frees the job, the thread waits on itself forever (a tight seal loop hung in about 1 run in 6 here). So
   * the generator encodes the public half itself and it is imported afresh: nothing exports a generated key.
   */
  const generateX25519 = generateKeyPairSync as unknown as (
    type: "x25519",
    options: { publicKeyEncoding: { format: "jwk" } },
  ) => { publicKey: JsonWebKey; privateKey: KeyObject };

  function toRaw(key: Key): ArrayBuffer {
    const jwk = keyObject(key).export({ format: "jwk" });
    const field = keyObject(key).type === "private" ? jwk.d : jwk.x;
    return arrayBufferOf(Buffer.from(field!, "base64url"));
  }

  class NodeX25519 implements DhkemPrimitives {
    constructor(private readonly hkdf: NodeHkdfSha256) {}

    serializePublicKey = async (key: Key) => toRaw(key);
    deserializePublicKey = async (key: Bytes) => fromRaw(bytesOf(key), true);
    serializePrivateKey = async (key: Key) => toRaw(key);
    deserializePrivateKey = async (key: Bytes) => fromRaw(bytesOf(key), false);

    async importKey(format: "raw" | "jwk", key: ArrayBuffer | webcrypto.JsonWebKey, isPublic: boolean): Promise<Key> {
      if (format !== "raw" || !(key instanceof ArrayBuffer)) throw new Error("only raw X25519 keys are supported");
      return fromRaw(bytesOf(key), isPublic);
    }

    async generateKeyPair(): Promise<KeyPair> {
      const { privateKey, publicKey } = generateX25519("x25519", { publicKeyEncoding: { format: "jwk" } });
      return { privateKey: asKey(privateKey), publicKey: asKey(createPublicKey({ key: publicKey, format: "jwk" })) };
    }

    /** RFC 9180 §7.1.3 DeriveKeyPair for X25519, exactly as @hpke/core's own X25519 does it. */
    async deriveKeyPair(ikm: Bytes): Promise<KeyPair> {
      const prk = await this.hkdf.labeledExtract(EMPTY, LABEL_DKP_PRK, new Uint8Array(bytesOf(ikm)));
      const sk = await this.hkdf.labeledExpand(prk, LABEL_SK, EMPTY, 32);
      const privateKey = fromRaw(bytesOf(sk), false);
      return { privateKey, publicKey: await this.derivePublicKey(privateKey) };
    }

    async derivePublicKey(key: Key): Promise<Key> {
      return asKey(createPublicKey(keyObject(key)));
    }

    async dh(sk: Key, pk: Key): Promise<ArrayBuffer> {
      const shared = diffieHellman({ privateKey: keyObject(sk), publicKey: keyObject(pk) });
      // RFC 9180 §7.1.4: an all-zero shared secret (a small-order public key) must be rejected
      if (shared.every((b) => b === 0)) throw new Error("X25519 produced an all-zero shared secret");
      return arrayBufferOf(shared);
    }
  }

  /** DHKEM(X25519, HKDF-SHA256) on node:crypto, for @hpke/core's CipherSuite. */
  function nodeDhkemX25519(): KemInterface {
    const kdf = new NodeHkdfSha256();
    const kem = new Dhkem(KemId.DhkemX25519HkdfSha256, new NodeX25519(kdf), kdf);
    // the base class leaves the sizes at 0 for its subclasses to set; a 0-byte shared secret would key nothing
    return Object.assign(kem, { secretSize: 32, encSize: 32, publicKeySize: 32, privateKeySize: 32 });
  }

  return { kem: nodeDhkemX25519, Hkdf: NodeHkdfSha256 };
}
