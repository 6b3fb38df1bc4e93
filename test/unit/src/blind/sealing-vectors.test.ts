// SEALING.md's test vectors: from the fixed keys there, svc seals the envelope byte for byte, the first candidate
// opens it and derives the answer key, and the frames it seals are the ones written, opening in order on the caller's side;
// on both of the client's engines (client/engines.ts): node:crypto's and the portable JavaScript a browser runs.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { fromBase64url, toBase64url, type SealedEnvelope } from "../../../../src/blind/format.ts";
import { FrameOpener, FrameSealer, openForCandidate, sealForCandidates } from "../../../../src/blind/seal.ts";
import type { RouteKind } from "../../../../src/openai/route-kinds.ts";
import { enginesFor } from "../../../../client/engines.ts";

interface Vectors {
  suite: string;
  candidates: { provider: string; ikm: string; private_key: string; public_key: string }[];
  request_key: string;
  ephemeral: string[];
  clear: { kind: RouteKind; alias: string; stream: boolean; max_tokens: number };
  plaintext: string;
  envelope: SealedEnvelope;
  answer_key: string;
  frames: { text: string; final: boolean; sealed: string }[];
}

function vectorsFromDoc(): Vectors {
  const doc = readFileSync(new URL("../../../../SEALING.md", import.meta.url), "utf8");
  const block = /## Test vectors[\s\S]*?```json\n([\s\S]*?)\n```/.exec(doc);
  if (!block) throw new Error("SEALING.md has no test vector block");
  return JSON.parse(block[1]!) as Vectors;
}

const bytes = (hex: string) => new Uint8Array(Buffer.from(hex, "hex"));
const hex = (b: ArrayBuffer | Uint8Array) => Buffer.from(b instanceof Uint8Array ? b : new Uint8Array(b)).toString("hex");

describe.each([["node:crypto", await enginesFor()], ["javascript", await enginesFor({})]] as const)("SEALING.md test vectors on %s", (kind, engines) => {
  const v = vectorsFromDoc();
  const { suite } = engines;

  it("is the engine named", () => expect(engines.kind).toBe(kind));

  it("each candidate's keys are DeriveKeyPair(ikm)", async () => {
    for (const c of v.candidates) {
      const pair = await suite.kem.deriveKeyPair(bytes(c.ikm).buffer as ArrayBuffer);
      expect(hex(await suite.kem.serializePublicKey(pair.publicKey))).toBe(c.public_key);
      expect(hex(await suite.kem.serializePrivateKey(pair.privateKey))).toBe(c.private_key);
    }
  });

  it("the envelope, byte for byte, from the fixed request key and ephemeral seeds", async () => {
    const recipients = v.candidates.map((c) => ({ provider: c.provider, publicKey: bytes(c.public_key) }));
    const sealed = await sealForCandidates(suite, new TextEncoder().encode(v.plaintext), v.clear, recipients, { requestKey: bytes(v.request_key), ephemeral: v.ephemeral.map(bytes) });
    expect(JSON.stringify(sealed.envelope)).toBe(JSON.stringify(v.envelope));
    expect(hex(await sealed.answerKey(v.candidates[0]!.provider))).toBe(v.answer_key);
  });

  it("the first candidate opens it to the plaintext and the same answer key; its frames are the ones written and open in order", async () => {
    const first = v.candidates[0]!;
    const recipientKey = await suite.kem.deriveKeyPair(bytes(first.ikm).buffer as ArrayBuffer);
    const { plaintext, answerKey } = await openForCandidate(suite, recipientKey, first.provider, v.envelope);
    expect(new TextDecoder().decode(plaintext)).toBe(v.plaintext);
    expect(hex(answerKey)).toBe(v.answer_key);
    const sealer = new FrameSealer(answerKey, v.clear.alias, first.provider);
    const opener = new FrameOpener(answerKey, v.clear.alias, first.provider);
    for (const frame of v.frames) {
      expect(toBase64url(await sealer.seal(frame.text, frame.final))).toBe(frame.sealed);
      expect(fromBase64url(frame.sealed).length % 512).toBe(16);
      expect(await opener.open(fromBase64url(frame.sealed), frame.final)).toBe(frame.text);
    }
    expect(opener.ended).toBe(true);
  });

  it("the second candidate opens the same request; an envelope with a clear field changed opens for neither", async () => {
    const second = v.candidates[1]!;
    const key = await suite.kem.deriveKeyPair(bytes(second.ikm).buffer as ArrayBuffer);
    expect(new TextDecoder().decode((await openForCandidate(suite, key, second.provider, v.envelope)).plaintext)).toBe(v.plaintext);
    await expect(openForCandidate(suite, key, second.provider, { ...v.envelope, max_tokens: v.envelope.max_tokens + 1 })).rejects.toThrow(/does not open/);
  });
});
