// Gateway-blind sealing (DESIGN §10, SEALING.md): the caller seals one request key to up to three attested
// candidates with HPKE and the body once under that key; the answering candidate seals its padded frames under a key
// both ends export from their shared HPKE context, so only that caller opens them, in order, for this request only.
// Portable (@hpke/core and @hpke/chacha20poly1305 on WebCrypto and JavaScript); the agent hands in node's KEM for speed.
import { CipherSuite, HkdfSha256, type SenderContext } from "@hpke/core";
import type { KemInterface } from "@hpke/common";
import { Chacha20Poly1305 } from "@hpke/chacha20poly1305";
import { DhkemX25519HkdfSha256 } from "@hpke/dhkem-x25519";
import { sha256Hex } from "../receipt/sha256.ts";
import { frameAad, fromBase64url, infoFor, pad, requestAad, RESPONSE_KEY_LABEL, toBase64url, unpad, type Clear, type SealedEnvelope } from "./format.ts";

/** The suite: DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, ChaCha20-Poly1305; `kem` and `kdf` may be faster twins. */
export function blindSuite(kem: KemInterface = new DhkemX25519HkdfSha256(), kdf = new HkdfSha256()): CipherSuite {
  return new CipherSuite({ kem, kdf, aead: new Chacha20Poly1305() });
}

const aead = new Chacha20Poly1305();
const ZERO_NONCE = new Uint8Array(12);
const KEY_BYTES = 32;
// a copy of exactly these bytes (a node Buffer's slice() is a view into a shared pool)
const buffer = (bytes: Uint8Array): ArrayBuffer => new Uint8Array(bytes).buffer;

/** Why a sealed request or frame did not open; never says more than which step failed. */
export class SealError extends Error {
  override name = "SealError";
}

export interface Recipient {
  /** Provider id, 64 lowercase hex. */
  provider: string;
  /** Its attested X25519 sealing key, raw (32 bytes). */
  publicKey: Uint8Array;
}

export interface SealedForCandidates {
  envelope: SealedEnvelope;
  /** The answer's key for the candidate that answers, as its HPKE context exports it. */
  answerKey(provider: string): Promise<Uint8Array>;
}

/** Fixed keying material, for SEALING.md's test vectors only: every real request draws its own. */
export interface VectorKeys {
  requestKey: Uint8Array;
  /** Each candidate's ephemeral key seed (HPKE's ekm), in order. */
  ephemeral: Uint8Array[];
}

/** Caller side: `plaintext` sealed once under a fresh request key, which is sealed to each recipient. */
export async function sealForCandidates(suite: CipherSuite, plaintext: Uint8Array, clear: Omit<Clear, "request_sha256">, recipients: readonly Recipient[], vector?: VectorKeys): Promise<SealedForCandidates> {
  const key = vector?.requestKey ?? globalThis.crypto.getRandomValues(new Uint8Array(KEY_BYTES));
  const full: Clear = { ...clear, request_sha256: sha256Hex(plaintext) };
  const contexts = new Map<string, SenderContext>();
  const candidates = [];
  for (const [i, { provider, publicKey }] of recipients.entries()) {
    const recipientPublicKey = await suite.kem.deserializePublicKey(buffer(publicKey));
    const ekm = vector?.ephemeral[i];
    const context = await suite.createSenderContext({ recipientPublicKey, info: buffer(infoFor(clear.alias, provider)), ...(ekm === undefined ? {} : { ekm: buffer(ekm) }) });
    const wrapped = new Uint8Array(await context.seal(buffer(key)));
    contexts.set(provider, context);
    candidates.push({ provider, enc: toBase64url(new Uint8Array(context.enc)), key: toBase64url(wrapped) });
  }
  const ct = new Uint8Array(await aead.createEncryptionContext(buffer(key)).seal(ZERO_NONCE, pad(plaintext), requestAad(full)));
  return {
    envelope: { v: 1, ...full, candidates, ct: toBase64url(ct) },
    answerKey: async (provider) => {
      const context = contexts.get(provider);
      if (context === undefined) throw new SealError(`provider ${provider} is not one of this request's candidates`);
      return new Uint8Array(await context.export(buffer(RESPONSE_KEY_LABEL), KEY_BYTES));
    },
  };
}

/** Agent side: the plaintext sealed to `provider` (this agent) and the answer's key; throws SealError for anything else. */
export async function openForCandidate(suite: CipherSuite, recipientKey: Awaited<ReturnType<CipherSuite["kem"]["deriveKeyPair"]>>, provider: string, envelope: SealedEnvelope): Promise<{ plaintext: Uint8Array; answerKey: Uint8Array }> {
  const mine = envelope.candidates.find((c) => c.provider === provider);
  if (mine === undefined) throw new SealError("this provider is not one of the request's candidates");
  let key: Uint8Array;
  let answerKey: Uint8Array;
  try {
    const context = await suite.createRecipientContext({ recipientKey, enc: buffer(fromBase64url(mine.enc)), info: buffer(infoFor(envelope.alias, provider)) });
    key = new Uint8Array(await context.open(buffer(fromBase64url(mine.key))));
    answerKey = new Uint8Array(await context.export(buffer(RESPONSE_KEY_LABEL), KEY_BYTES));
  } catch {
    throw new SealError("the request key does not open for this provider and alias");
  }
  let padded: Uint8Array;
  try {
    padded = new Uint8Array(await aead.createEncryptionContext(buffer(key)).open(ZERO_NONCE, buffer(fromBase64url(envelope.ct)), requestAad(envelope)));
  } catch {
    throw new SealError("the request body does not open under its key and clear fields");
  }
  const plaintext = unpad(padded);
  if (plaintext === undefined) throw new SealError("the request body's padding is broken");
  if (sha256Hex(plaintext) !== envelope.request_sha256) throw new SealError("the request body is not the one request_sha256 names");
  return { plaintext, answerKey };
}

/** The frame nonce: 4 zero bytes, then the frame's number, big-endian. */
function frameNonce(counter: number): Uint8Array {
  const nonce = new Uint8Array(12);
  new DataView(nonce.buffer).setBigUint64(4, BigInt(counter));
  return nonce;
}

/** The answering agent's frames: each padded, numbered, bound to alias and provider; the last sealed final. */
export class FrameSealer {
  private counter = 0;
  private ended = false;

  constructor(private readonly key: Uint8Array, private readonly alias: string, private readonly provider: string) {}

  async seal(text: string, final: boolean): Promise<Uint8Array> {
    if (this.ended) throw new SealError("the answer's final frame was sealed already");
    this.ended = final;
    const context = aead.createEncryptionContext(buffer(this.key));
    return new Uint8Array(await context.seal(frameNonce(this.counter++), pad(new TextEncoder().encode(text)), frameAad(this.alias, this.provider, final)));
  }
}

/** The caller's end: frames open only in the order sealed, from the provider named, and nothing after the final one. */
export class FrameOpener {
  private counter = 0;
  /** Whether the final frame has been opened: a stream that ends before it was cut. */
  ended = false;
  private readonly decoder = new TextDecoder("utf-8", { fatal: true });

  constructor(private readonly key: Uint8Array, private readonly alias: string, private readonly provider: string) {}

  async open(sealed: Uint8Array, final: boolean): Promise<string> {
    if (this.ended) throw new SealError("a frame came after the answer's final frame");
    let padded: Uint8Array;
    try {
      padded = new Uint8Array(await aead.createEncryptionContext(buffer(this.key)).open(frameNonce(this.counter), buffer(sealed), frameAad(this.alias, this.provider, final)));
    } catch {
      throw new SealError("an answer frame does not open: tampered, out of order, from another provider or request");
    }
    this.counter++;
    this.ended = final;
    const text = unpad(padded);
    if (text === undefined) throw new SealError("an answer frame's padding is broken");
    try {
      return this.decoder.decode(text);
    } catch {
      throw new SealError("an answer frame is not UTF-8");
    }
  }
}
