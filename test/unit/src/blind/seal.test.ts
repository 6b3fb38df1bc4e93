// DESIGN §10 and SEALING.md: a request sealed to up to three candidates opens for each of them only, under its clear
// fields; the answer's frames open only for that request, from the provider that answered, in order, to the final one;
// every sealed length is a multiple of 512 bytes. The portable suite (the caller's) and node's (the agent's) agree.
import { describe, expect, it } from "vitest";
import { NodeHkdfSha256, nodeDhkemX25519 } from "../../../../src/crypto/hpke-node.ts";
import { fromBase64url, PAD_BYTES, pad, SealedEnvelopeSchema, unpad, type SealedEnvelope } from "../../../../src/blind/format.ts";
import { blindSuite, FrameOpener, FrameSealer, openForCandidate, SealError, sealForCandidates } from "../../../../src/blind/seal.ts";
import { LineReader, lineText } from "../../../../src/blind/lines.ts";

const portable = blindSuite();
const native = blindSuite(nodeDhkemX25519(), new NodeHkdfSha256());
const ids = ["a", "b", "c", "d"].map((c) => c.repeat(64));

async function provider(id: string, seed: number) {
  const keyPair = await portable.kem.deriveKeyPair(new Uint8Array(32).fill(seed).buffer as ArrayBuffer);
  const publicKey = new Uint8Array(await portable.kem.serializePublicKey(keyPair.publicKey));
  // the agent's own copy of its key pair, as node's KEM holds it
  const nativePair = await native.kem.deriveKeyPair(new Uint8Array(32).fill(seed).buffer as ArrayBuffer);
  return { id, keyPair, nativePair, publicKey };
}

const clear = { kind: "chat" as const, alias: "qwen3-4b", stream: true, max_tokens: 64 };
const plaintext = new TextEncoder().encode(JSON.stringify({ model: "qwen3-4b", messages: [{ role: "user", content: "a canary 7f3a" }] }));

describe("DESIGN §10 a request sealed to its candidates", () => {
  it("opens for each candidate, with node's KEM or the portable one, to the plaintext and the caller's answer key", async () => {
    const candidates = await Promise.all(ids.slice(0, 3).map((id, i) => provider(id, i + 1)));
    const sealed = await sealForCandidates(portable, plaintext, clear, candidates.map((c) => ({ provider: c.id, publicKey: c.publicKey })));
    expect(SealedEnvelopeSchema.parse(JSON.parse(JSON.stringify(sealed.envelope)))).toEqual(sealed.envelope);
    for (const c of candidates) {
      for (const [suite, pair] of [[portable, c.keyPair], [native, c.nativePair]] as const) {
        const opened = await openForCandidate(suite, pair, c.id, sealed.envelope);
        expect(new TextDecoder().decode(opened.plaintext)).toBe(new TextDecoder().decode(plaintext));
        expect(opened.answerKey).toEqual(await sealed.answerKey(c.id));
      }
    }
    // the body is sealed once, padded: its length says only its bucket
    expect((fromBase64url(sealed.envelope.ct).length - 16) % PAD_BYTES).toBe(0);
  });

  it("opens for no one else, and not once the gateway changes a clear field, a candidate's key or the body", async () => {
    const [one, two] = await Promise.all([provider(ids[0]!, 1), provider(ids[1]!, 2)]);
    const outsider = await provider(ids[3]!, 9);
    const { envelope } = await sealForCandidates(portable, plaintext, clear, [{ provider: one.id, publicKey: one.publicKey }]);
    const refused = async (e: SealedEnvelope, who = one) => (await openForCandidate(portable, who.keyPair, who.id, e).catch((err: unknown) => err)) as SealError;
    expect((await refused(envelope, outsider)).message).toContain("not one of the request's candidates");
    // another provider's key under the candidate's name: the HPKE info binds the provider id
    expect((await refused({ ...envelope, candidates: [{ ...envelope.candidates[0]!, provider: two.id }] }, two)).message).toContain("does not open");
    expect((await refused({ ...envelope, alias: "qwen3-8b" })).message).toContain("does not open for this provider and alias");
    for (const change of [{ max_tokens: 65 }, { stream: false }, { kind: "responses" as const }, { request_sha256: "0".repeat(64) }]) {
      expect((await refused({ ...envelope, ...change })).message, JSON.stringify(change)).toContain("request body does not open");
    }
    const ct = fromBase64url(envelope.ct);
    ct[5]! ^= 1;
    expect(await refused({ ...envelope, ct: Buffer.from(ct).toString("base64url") })).toBeInstanceOf(SealError);
  });
});

describe("DESIGN §10 the answer's frames", () => {
  async function session() {
    const [one, two] = await Promise.all([provider(ids[0]!, 1), provider(ids[1]!, 2)]);
    const sealed = await sealForCandidates(portable, plaintext, clear, [one, two].map((c) => ({ provider: c.id, publicKey: c.publicKey })));
    const { answerKey } = await openForCandidate(native, two.nativePair, two.id, sealed.envelope);
    return { sealed, sealer: new FrameSealer(answerKey, clear.alias, two.id), opener: async (who = two.id) => new FrameOpener(await sealed.answerKey(who), clear.alias, who), two };
  }

  it("open in order to the final one, each padded to a multiple of 512 bytes", async () => {
    const { sealer, opener } = await session();
    const texts = ['{"type":"delta","text":"hi"}', "x".repeat(1500), '{"type":"done"}'];
    const frames = await Promise.all(texts.map((t, i) => sealer.seal(t, i === texts.length - 1)));
    for (const f of frames) expect((f.length - 16) % PAD_BYTES).toBe(0);
    const reader = await opener();
    for (const [i, f] of frames.entries()) expect(await reader.open(f, i === frames.length - 1)).toBe(texts[i]);
    expect(reader.ended).toBe(true);
    await expect(reader.open(frames[0]!, false)).rejects.toThrow("after the answer's final frame");
    await expect(sealer.seal("more", false)).rejects.toThrow("final frame was sealed already");
  });

  it("a frame reordered, tampered, marked final falsely, or opened as another candidate's is refused", async () => {
    const { sealer, opener, sealed } = await session();
    const a = await sealer.seal("first", false);
    const b = await sealer.seal("second", true);
    await expect((await opener()).open(b, true)).rejects.toThrow(SealError);
    await expect((await opener()).open(a, true)).rejects.toThrow(SealError);
    const bent = a.slice();
    bent[0]! ^= 1;
    await expect((await opener()).open(bent, false)).rejects.toThrow(SealError);
    await expect((await opener(sealed.envelope.candidates[0]!.provider)).open(a, false)).rejects.toThrow(SealError);
  });

  it("an answer replayed onto another request opens under none of its keys", async () => {
    const first = await session();
    const old = await first.sealer.seal("the old answer", true);
    const second = await session();
    await expect((await second.opener()).open(old, true)).rejects.toThrow(SealError);
  });
});

describe("SEALING.md padding and relay lines", () => {
  it("pad and unpad are inverse; anything but 0x80 then zeros is refused", () => {
    for (const n of [0, 1, 511, 512, 513, 2000]) {
      const bytes = new Uint8Array(n).fill(7);
      const padded = pad(bytes);
      expect(padded.length % PAD_BYTES).toBe(0);
      expect(padded.length).toBeGreaterThan(n);
      expect(unpad(padded)).toEqual(bytes);
    }
    expect(unpad(new Uint8Array(512))).toBeUndefined();
    expect(unpad(new Uint8Array(100))).toBeUndefined();
  });

  it("lines read back as written, in any split, and an unknown or overlong line is refused", () => {
    const lines = [
      { type: "provider" as const, provider: ids[0]! },
      { type: "frame" as const, data: "AbC-_9", final: false },
      { type: "keepalive" as const },
      { type: "frame" as const, data: "Zz", final: true },
      { type: "error" as const, envelope: { error: { message: "gone", type: "api_error", code: "provider_error" as const, param: null, svc_action: "retry" as const } } },
    ];
    const text = lines.map(lineText).join("");
    for (const cut of [1, 7, 40, text.length - 1]) {
      const reader = new LineReader();
      expect([...reader.push(text.slice(0, cut)), ...reader.push(text.slice(cut))]).toEqual(lines);
      reader.end();
    }
    expect(() => new LineReader().push("x nope\n")).toThrow("no known kind");
    const cut = new LineReader();
    cut.push("f abc");
    expect(() => cut.end()).toThrow("middle of a line");
  });
});
