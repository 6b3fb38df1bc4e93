// client/engines.ts: node:crypto's primitives where the runtime lends them and they give the known answers, the portable
// ones elsewhere, and the two agree: a request either seals opens at an agent, and a signature one accepts the other does.
import * as nodeCrypto from "node:crypto";
import { describe, expect, it } from "vitest";
import { enginesFor } from "../../../client/engines.ts";
import { blindSuite, openForCandidate, sealForCandidates } from "../../../src/blind/seal.ts";
import { nodeDhkemX25519, NodeHkdfSha256 } from "../../../src/crypto/hpke-node.ts";
import { SIGNATURE_DOMAINS, Signer, verifySignature } from "../../../src/crypto/signing.ts";

const agentSuite = blindSuite(nodeDhkemX25519(), new NodeHkdfSha256());
const clear = { kind: "chat" as const, alias: "tiny-random", stream: false, max_tokens: 16 };
/** A runtime lending these modules, as node, Deno and Bun do through process.getBuiltinModule. */
const lending = (modules: Record<string, unknown>) => ({ process: { getBuiltinModule: (id: string) => modules[id] } });

describe("the client's engines", () => {
  it("take node:crypto from a runtime that lends it through process.getBuiltinModule, else the portable ones", async () => {
    const native = await enginesFor();
    expect(native.kind).toBe("node:crypto");
    expect(native.signature).toBeTypeOf("function");
    for (const runtime of [{}, { process: {} }, lending({}), lending({ "node:crypto": nodeCrypto })]) {
      const engines = await enginesFor(runtime);
      expect(engines.kind).toBe("javascript");
      expect(engines.signature).toBeUndefined();
    }
  });

  it("keep the portable ones when the lent node:crypto gives a wrong answer or throws", async () => {
    const wrongDh = { ...nodeCrypto, diffieHellman: (keys: Parameters<typeof nodeCrypto.diffieHellman>[0]) => nodeCrypto.diffieHellman(keys).fill(1) };
    const acceptsAll = { ...nodeCrypto, verify: () => true };
    const throwing = { ...nodeCrypto, generateKeyPairSync: () => { throw new Error("unsupported"); }, createPrivateKey: () => { throw new Error("unsupported"); } };
    for (const crypto of [wrongDh, acceptsAll, throwing]) {
      expect((await enginesFor(lending({ "node:crypto": crypto, "node:buffer": { Buffer } }))).kind).toBe("javascript");
    }
  });

  it.each(["node:crypto", "javascript"] as const)("a request sealed on %s opens at the agent, with the answer key both ends derive", async (kind) => {
    const { suite } = await (kind === "node:crypto" ? enginesFor() : enginesFor({}));
    const pairs = await Promise.all([1, 2, 3].map(() => agentSuite.kem.generateKeyPair()));
    const recipients = await Promise.all(pairs.map(async (pair: Awaited<ReturnType<typeof agentSuite.kem.generateKeyPair>>, i: number) => ({ provider: String(i + 1).repeat(64), publicKey: new Uint8Array(await agentSuite.kem.serializePublicKey(pair.publicKey)) })));
    const plaintext = new TextEncoder().encode(JSON.stringify({ messages: [{ role: "user", content: "hello" }] }));
    const sealed = await sealForCandidates(suite, plaintext, clear, recipients);
    for (const [i, { provider }] of recipients.entries()) {
      const opened = await openForCandidate(agentSuite, pairs[i]!, provider, sealed.envelope);
      expect(opened.plaintext).toEqual(plaintext);
      expect(opened.answerKey).toEqual(await sealed.answerKey(provider));
    }
  });

  it("the native signature check accepts and refuses exactly what the portable one does", async () => {
    const native = (await enginesFor()).signature!;
    const signer = Signer.fromSeed(new Uint8Array(32).fill(7));
    const other = Signer.fromSeed(new Uint8Array(32).fill(8));
    const payload = { id: "r_1", counts: [1, 2, 3], text: "é" };
    const signature = signer.sign(SIGNATURE_DOMAINS.receipt, payload);
    const flipped = (signature.startsWith("0") ? "1" : "0") + signature.slice(1);
    const cases: [string, string, unknown, string][] = [
      [signer.publicKey, SIGNATURE_DOMAINS.receipt, payload, signature],
      [signer.publicKey, SIGNATURE_DOMAINS.attestation, payload, signature],
      [signer.publicKey, SIGNATURE_DOMAINS.receipt, { ...payload, counts: [1, 2, 4] }, signature],
      [other.publicKey, SIGNATURE_DOMAINS.receipt, payload, signature],
      [signer.publicKey, SIGNATURE_DOMAINS.receipt, payload, flipped],
      [signer.publicKey.toUpperCase(), SIGNATURE_DOMAINS.receipt, payload, signature],
      ["00", SIGNATURE_DOMAINS.receipt, payload, signature],
      [signer.publicKey, SIGNATURE_DOMAINS.receipt, payload, "zz"],
    ];
    const verdicts = cases.map(([key, domain, body, sig]) => [native(key, domain as never, body, sig), verifySignature(key, domain as never, body, sig)]);
    expect(verdicts).toEqual([[true, true], ...Array.from({ length: cases.length - 1 }, () => [false, false])]);
  });
});
