// DESIGN §5 sealed sessions: HPKE from gateway to the provider's X25519 key, frames back under the
// session's exported key, bound to that one request.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { openRequest, sealingKeyPair, sealRequest } from "../../../../src/crypto/seal.ts";

const plaintext = Buffer.from('{"messages":[{"content":"canary","role":"user"}]}');

describe("DESIGN §5 Sealed sessions", () => {
  it("the provider opens what the gateway sealed to its key, and the frames it seals back open in order", async () => {
    const provider = await sealingKeyPair(randomBytes(32));
    const { sealed, frames: gatewayFrames } = await sealRequest(provider.publicKey, "s_session1", plaintext);
    expect(Buffer.from(sealed.ct, "base64").includes(Buffer.from("canary"))).toBe(false);
    const opened = await openRequest(provider, "s_session1", sealed);
    expect(opened.plaintext.equals(plaintext)).toBe(true);
    const sent = ["a", "b", "c"].map((t) => opened.frames.seal(t));
    expect(sent.map((f) => gatewayFrames.open(f))).toEqual(["a", "b", "c"]);
  });

  it("a request sealed to another key, or under another session id, does not open", async () => {
    const provider = await sealingKeyPair(randomBytes(32));
    const other = await sealingKeyPair(randomBytes(32));
    const { sealed } = await sealRequest(provider.publicKey, "s_session1", plaintext);
    await expect(openRequest(other, "s_session1", sealed)).rejects.toThrow();
    await expect(openRequest(provider, "s_session2", sealed)).rejects.toThrow();
  });

  it("frames cannot be tampered with, reordered, replayed or moved to another session", async () => {
    const provider = await sealingKeyPair(randomBytes(32));
    const one = await sealRequest(provider.publicKey, "s_session1", plaintext);
    const two = await sealRequest(provider.publicKey, "s_session2", plaintext);
    const agentOne = (await openRequest(provider, "s_session1", one.sealed)).frames;
    const [first, second] = [agentOne.seal("first"), agentOne.seal("second")];
    expect(() => one.frames.open(second)).toThrow(); // reordered
    const tampered = Buffer.from(first, "base64");
    tampered[0]! ^= 1;
    expect(() => one.frames.open(tampered.toString("base64"))).toThrow();
    expect(() => two.frames.open(first)).toThrow(); // another session's key
    expect(one.frames.open(first)).toBe("first");
    expect(() => one.frames.open(first)).toThrow(); // replayed
  });
});
