// The fastest sealing and signature checks this runtime has: node:crypto's X25519, HMAC and Ed25519 where node, Deno or
// Bun lend it through process.getBuiltinModule (sealing to three candidates takes a seventh of the CPU, a receipt's
// check a twelfth), else the portable JavaScript ones, which every browser runs. A runtime's node:crypto is used only
// once it gives known answers, so one that imitates node's imperfectly costs speed, never a wrong seal or check.
import type { CipherSuite } from "@hpke/core";
import { bytesToHex } from "@noble/hashes/utils.js";
import type * as NodeCrypto from "node:crypto";
import { blindSuite } from "../src/blind/seal.ts";
import { nativeSignatureCheck } from "../src/crypto/native-ed25519.ts";
import { nativeHpke } from "../src/crypto/native-hpke.ts";
import { SIGNATURE_DOMAINS, type verifySignature } from "../src/receipt/signature.ts";

export interface Engines {
  /** Which primitives: "node:crypto" (native) or "javascript" (portable). */
  kind: "node:crypto" | "javascript";
  suite: CipherSuite;
  /** The Ed25519 check receipts and evidence use; undefined keeps src/receipt/'s own. */
  signature?: typeof verifySignature;
}

interface Runtime {
  process?: { getBuiltinModule?: (id: string) => unknown };
}

// Known answers, from the portable suite: DeriveKeyPair(32 × 0x01), Encap to it with ekm 32 × 0x02, and an Ed25519
// signature by seed 32 × 0x03 over KNOWN_PAYLOAD in the receipt domain.
const KNOWN = {
  publicKey: "41852320ff367495fa522c94cb83af391e4e89018392725bbf2098dd931bc424",
  enc: "6080bbe51005ea9acc863580ce57317d46bef6333558d5bfa97e461342985005",
  sharedSecret: "3014e1ac3c9bea2eddee26d2a5ebc9d644f521ecd3627af7f461223ba85b3519",
  signingKey: "ed4928c628d1c2c6eae90338905995612959273a5c63f93636c14614ac8737d1",
  signature: "0baff5a07c2730912de0c6b34f69b14860d9dc3f842e121a4a860e968ce0f854e3702662722d70ef7d04125e218da9b789015ae67374df9b33aced6393ce310b",
};
const KNOWN_PAYLOAD = { svc: "engine self-test" };

const hex = (bytes: ArrayBuffer) => bytesToHex(new Uint8Array(bytes));
const filled = (byte: number) => new Uint8Array(32).fill(byte).buffer;

/** The engines for `runtime` (globalThis by default): native when it lends node:crypto and node:buffer and they give the known answers, else portable. */
export async function enginesFor(runtime: Runtime = globalThis as Runtime): Promise<Engines> {
  const portable: Engines = { kind: "javascript", suite: blindSuite() };
  try {
    const builtin = runtime.process?.getBuiltinModule;
    const crypto = builtin?.("node:crypto") as typeof NodeCrypto | undefined;
    const buffer = builtin?.("node:buffer") as { Buffer: typeof globalThis.Buffer } | undefined;
    if (crypto === undefined || buffer?.Buffer === undefined) return portable;
    const hpke = nativeHpke(crypto, buffer.Buffer);
    const native: Engines = { kind: "node:crypto", suite: blindSuite(hpke.kem(), new hpke.Hkdf()), signature: nativeSignatureCheck(crypto, buffer.Buffer) };
    return (await givesKnownAnswers(native)) ? native : portable;
  } catch {
    return portable;
  }
}

async function givesKnownAnswers({ suite: { kem }, signature }: Engines): Promise<boolean> {
  const pair = await kem.deriveKeyPair(filled(1));
  const { enc, sharedSecret } = await kem.encap({ recipientPublicKey: pair.publicKey, ekm: filled(2) });
  const flipped = (KNOWN.signature.startsWith("0") ? "1" : "0") + KNOWN.signature.slice(1);
  return hex(await kem.serializePublicKey(pair.publicKey)) === KNOWN.publicKey && hex(enc) === KNOWN.enc && hex(sharedSecret) === KNOWN.sharedSecret &&
    signature!(KNOWN.signingKey, SIGNATURE_DOMAINS.receipt, KNOWN_PAYLOAD, KNOWN.signature) && !signature!(KNOWN.signingKey, SIGNATURE_DOMAINS.receipt, KNOWN_PAYLOAD, flipped);
}
