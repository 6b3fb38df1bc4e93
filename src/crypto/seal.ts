// Sealed sessions (DESIGN §5): the gateway seals the request to the provider's attested X25519 key with
// HPKE (RFC 9180: DHKEM-X25519, HKDF-SHA256, ChaCha20-Poly1305); both ends then derive a frame key from
// the HPKE context, so the token frames coming back are sealed too and bound to this one request.
import { CipherSuite } from "@hpke/core";
import { Chacha20Poly1305 } from "@hpke/chacha20poly1305";
import { createCipheriv, createDecipheriv } from "node:crypto";
import { nodeDhkemX25519, NodeHkdfSha256 } from "./hpke-node.ts";

const suite = new CipherSuite({ kem: nodeDhkemX25519(), kdf: new NodeHkdfSha256(), aead: new Chacha20Poly1305() });
const INFO = bytes("svc-session/v1");
const FRAME_KEY_LABEL = bytes("svc-frames/v1");
const TAG_BYTES = 16;

function bytes(text: string): ArrayBuffer {
  return new TextEncoder().encode(text).buffer as ArrayBuffer;
}

function arrayBuffer(data: Uint8Array): ArrayBuffer {
  return data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer;
}

/** The session id is the HPKE associated data: a sealed request cannot be replayed under another session. */
function sessionAad(sessionId: string): ArrayBuffer {
  return bytes(`svc-request/v1\0${sessionId}`);
}

export interface SealingKeyPair {
  keyPair: Awaited<ReturnType<typeof suite.kem.deriveKeyPair>>;
  /** Raw X25519 public key, lowercase hex: what the agent attests and the gateway seals to. */
  publicKey: string;
}

export async function sealingKeyPair(seed: Uint8Array): Promise<SealingKeyPair> {
  const keyPair = await suite.kem.deriveKeyPair(arrayBuffer(seed));
  const publicKey = Buffer.from(await suite.kem.serializePublicKey(keyPair.publicKey)).toString("hex");
  return { keyPair, publicKey };
}

export interface SealedRequest {
  /** HPKE encapsulated key, base64. */
  enc: string;
  /** Ciphertext, base64. */
  ct: string;
}

/** Gateway side: seal `plaintext` to the provider; the returned frames open what the provider sends back. */
export async function sealRequest(
  recipientPublicKey: string,
  sessionId: string,
  plaintext: Uint8Array,
): Promise<{ sealed: SealedRequest; frames: FrameCipher }> {
  const recipient = await suite.kem.deserializePublicKey(arrayBuffer(Buffer.from(recipientPublicKey, "hex")));
  const sender = await suite.createSenderContext({ recipientPublicKey: recipient, info: INFO });
  const ct = await sender.seal(arrayBuffer(plaintext), sessionAad(sessionId));
  const frames = new FrameCipher(Buffer.from(await sender.export(FRAME_KEY_LABEL, 32)), sessionId);
  return { sealed: { enc: Buffer.from(sender.enc).toString("base64"), ct: Buffer.from(ct).toString("base64") }, frames };
}

/** Agent side: open a sealed request (throws if it was not sealed to this key for this session). */
export async function openRequest(
  own: SealingKeyPair,
  sessionId: string,
  sealed: SealedRequest,
): Promise<{ plaintext: Buffer; frames: FrameCipher }> {
  const recipient = await suite.createRecipientContext({
    recipientKey: own.keyPair,
    enc: arrayBuffer(Buffer.from(sealed.enc, "base64")),
    info: INFO,
  });
  const plaintext = Buffer.from(await recipient.open(arrayBuffer(Buffer.from(sealed.ct, "base64")), sessionAad(sessionId)));
  const frames = new FrameCipher(Buffer.from(await recipient.export(FRAME_KEY_LABEL, 32)), sessionId);
  return { plaintext, frames };
}

/**
 * ChaCha20-Poly1305 under the HPKE-exported key with a counter nonce: frames open only in the order they
 * were sealed, so a relay can neither drop, reorder, replay nor splice frames between sessions.
 */
export class FrameCipher {
  private sealed = 0n;
  private opened = 0n;

  constructor(
    private readonly key: Buffer,
    private readonly sessionId: string,
  ) {}

  seal(plaintext: string): string {
    const nonce = this.nonce(this.sealed++);
    const cipher = createCipheriv("chacha20-poly1305", this.key, nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(this.aad(), { plaintextLength: Buffer.byteLength(plaintext) });
    const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()]);
    return body.toString("base64");
  }

  /** Throws when the frame was tampered with, reordered or sealed for another session. */
  open(frame: string): string {
    const body = Buffer.from(frame, "base64");
    if (body.length < TAG_BYTES) throw new Error("sealed frame is too short");
    const decipher = createDecipheriv("chacha20-poly1305", this.key, this.nonce(this.opened), { authTagLength: TAG_BYTES });
    decipher.setAAD(this.aad(), { plaintextLength: body.length - TAG_BYTES });
    decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
    const text = Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]).toString("utf8");
    this.opened++;
    return text;
  }

  private aad(): Buffer {
    return Buffer.from(`svc-frame/v1\0${this.sessionId}`);
  }

  private nonce(counter: bigint): Buffer {
    const nonce = Buffer.alloc(12);
    nonce.writeBigUInt64BE(counter, 4);
    return nonce;
  }
}
