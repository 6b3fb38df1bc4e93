// DESIGN §10 on the agent: a request the caller sealed itself opens with the provider's sealing key, is held to every
// bound the gateway's parser would apply and to the clear fields the gateway acted on, runs with the gateway's cache
// scope, and comes back in padded frames the caller opens, the last one final with the signed receipt (or the error's
// code) beside it in the clear. A unit: the engine and the model store are fakes; the sealing is real.
import { describe, expect, it } from "vitest";
import { FrameOpener, blindSuite, sealForCandidates } from "../../../../src/blind/seal.ts";
import { fromBase64url, PAD_BYTES } from "../../../../src/blind/format.ts";
import { sealingKeyPair } from "../../../../src/crypto/seal.ts";
import { Signer } from "../../../../src/crypto/signing.ts";
import { canonicalJson } from "../../../../src/receipt/canonical-json.ts";
import { providerIdOf } from "../../../../src/receipt/provider-id.ts";
import { AnswerReader, checkReceipt } from "../../../../src/session/answer-reader.ts";
import type { SessionPlaintext } from "../../../../src/session/sealed-request.ts";
import type { FromAgent } from "../../../../src/wire/agent.ts";
import { ToAgentSchema } from "../../../../src/wire/agent.ts";
import { runSession, type SessionContext } from "../../../../agent/daemon/session-runner.ts";
import type { SessionMessage } from "../../../../agent/daemon/session-channel.ts";
import type { GenerateEvent, InferenceEngine } from "../../../../agent/engine/inference.ts";
import type { Turn } from "../../../../agent/engine/turn.ts";
import type { ModelStore } from "../../../../agent/models/store.ts";

const entry = { alias: "qwen3-4b", hub_id: "Qwen/Qwen3-4B-GGUF", file: "q.gguf", revision: "a".repeat(40), sha256: "b".repeat(64), size_bytes: 1, min_memory_gb: 1, license: "Apache-2.0" };
const suite = blindSuite();
const scope = { scope: "5".repeat(64), owner: "6".repeat(64) };

async function agent() {
  const signer = Signer.fromSeed(new Uint8Array(32).fill(1));
  const sealing = await sealingKeyPair(new Uint8Array(32).fill(2));
  const keys = { signer, sealing, providerId: providerIdOf(signer.publicKey), created: false };
  const sent: FromAgent[] = [];
  const turns: Turn[] = [];
  const engine: InferenceEngine = {
    async *generate(turn: Turn): AsyncGenerator<GenerateEvent, void, void> {
      turns.push(turn);
      yield { type: "delta", text: "hello " };
      yield { type: "delta", text: "there" };
      yield { type: "done", prompt_tokens: 9, cached_tokens: 0, completion_tokens: 2, finish_reason: "stop", model_sha256: entry.sha256 };
    },
    dispose: async () => undefined,
  };
  const ctx: SessionContext = {
    keys, engine, store: { entry: () => entry } as unknown as ModelStore, advertised: ["qwen3-4b"], grant: { rung: "process" },
    send: (m) => sent.push(m), log: () => undefined,
  };
  return { keys, ctx, sent, turns, provider: { id: keys.providerId, signing_key: signer.publicKey, trust: "process" as const } };
}

const base: SessionPlaintext = { model: "qwen3-4b", messages: [{ role: "user", content: "a canary" }], max_tokens: 8, temperature: 0.7, nonce: "c".repeat(32), client_nonce: null };

/** A caller's sealed session for `body` (its clear fields `clear`), as the coordinator hands it to the agent. */
async function sealed(a: Awaited<ReturnType<typeof agent>>, body: unknown, clear: { max_tokens?: number; stream?: boolean; alias?: string } = {}, to = a.keys.sealing.publicKey) {
  const plaintext = new TextEncoder().encode(canonicalJson(body));
  const sealedFor = await sealForCandidates(suite, plaintext, { kind: "chat", alias: clear.alias ?? "qwen3-4b", stream: clear.stream ?? true, max_tokens: clear.max_tokens ?? 8 }, [
    { provider: a.keys.providerId, publicKey: Buffer.from(to, "hex") },
  ]);
  // the coordinator relays what it was sent, read by the agent's own schema
  const message = ToAgentSchema.parse({ t: "session", id: "s_blindtest01", alias: clear.alias ?? "qwen3-4b", blind: sealedFor.envelope, cache: scope }) as SessionMessage;
  return { message, sealedFor, plaintext };
}

/** The frames as the caller opens them, in order, and what rode beside each in the clear. */
async function opened(a: Awaited<ReturnType<typeof agent>>, s: Awaited<ReturnType<typeof sealed>>) {
  const opener = new FrameOpener(await s.sealedFor.answerKey(a.keys.providerId), "qwen3-4b", a.keys.providerId);
  const frames = a.sent.filter((m): m is Extract<FromAgent, { t: "frame" }> => m.t === "frame");
  const texts = [];
  for (const f of frames) texts.push(await opener.open(fromBase64url(f.data), f.final === true));
  return { frames, texts, ended: opener.ended };
}

describe("DESIGN §10 a gateway-blind session on the agent", () => {
  it("opens, runs with the gateway's cache scope, and answers in padded frames the caller opens, the last final with the receipt beside it", async () => {
    const a = await agent();
    const s = await sealed(a, base);
    await runSession(s.message, a.ctx, new AbortController().signal);
    expect(a.turns[0]!.request).toMatchObject({ cache_scope: scope.scope, cache_owner: scope.owner });
    const { frames, texts, ended } = await opened(a, s);
    expect(ended).toBe(true);
    for (const f of frames) expect((fromBase64url(f.data).length - 16) % PAD_BYTES).toBe(0);
    const reader = new AnswerReader({ provider: a.provider, entry, body: base, requestSha256: s.sealedFor.envelope.request_sha256 });
    const reads = texts.map((t) => reader.read(t));
    expect(reader.answer.content).toBe("hello there");
    const end = reads.at(-1)!.end;
    expect(end?.type).toBe("done");
    // the gateway's copy, in the clear: the very receipt, checkable without the answer
    const last = frames.at(-1)!;
    expect(last.receipt).toEqual(end?.type === "done" ? end.receipt : undefined);
    expect(checkReceipt(last.receipt, { provider: a.provider, entry, requestSha256: s.sealedFor.envelope.request_sha256 }, undefined).valid).toBe(true);
    expect(JSON.stringify(a.sent)).not.toContain("canary");
    expect(a.sent.at(-1)).toEqual({ t: "end", id: "s_blindtest01" });
  });

  it("under cache_prompt false the gateway's scope is not joined", async () => {
    const a = await agent();
    await runSession((await sealed(a, { ...base, cache_prompt: false })).message, a.ctx, new AbortController().signal);
    expect(a.turns[0]!.request.cache_scope).toBeUndefined();
  });

  it("refuses, sealed with its code in the clear and nothing run, what the gateway's parser would refuse or the clear fields do not allow", async () => {
    const cases: [unknown, { max_tokens?: number; alias?: string }, string, string | null][] = [
      [{ ...base, model: "qwen3-8b" }, {}, "invalid_value", "model"],
      [{ ...base, cache_scope: "7".repeat(64) }, {}, "invalid_value", "cache_scope"],
      [{ ...base, max_tokens: 9 }, {}, "invalid_value", "max_tokens"],
      // no max_tokens: the default of 512 is what the answer may take
      [{ ...base, max_tokens: undefined }, { max_tokens: 100 }, "invalid_value", "max_tokens"],
      [{ ...base, messages: Array.from({ length: 101 }, () => ({ role: "user", content: "x" })) }, {}, "too_many_messages", "messages"],
      [{ ...base, messages: [{ role: "user", content: "x".repeat(256 * 1024 + 1) }] }, {}, "content_too_large", "messages"],
      [{ ...base, messages: [] }, {}, "invalid_value", "messages"],
      [{ ...base, temperature: "hot" }, {}, "invalid_type", "temperature"],
      [{ ...base, stop: ["x"], response_format: { type: "json_object" } }, {}, "unsupported_parameter", "stop"],
    ];
    for (const [body, clear, code, param] of cases) {
      const a = await agent();
      const s = await sealed(a, body, clear);
      await runSession(s.message, a.ctx, new AbortController().signal);
      expect(a.turns, code).toEqual([]);
      const { frames, texts, ended } = await opened(a, s);
      expect(ended).toBe(true);
      expect(frames).toHaveLength(1);
      expect(frames[0]!.code).toBe(code);
      expect(JSON.parse(texts[0]!)).toMatchObject({ type: "error", code, param });
    }
  });

  it("a request sealed to another key ends with sealed_request_invalid and no frame: nothing can be said in private", async () => {
    const a = await agent();
    const other = await sealingKeyPair(new Uint8Array(32).fill(9));
    const s = await sealed(a, base, {}, other.publicKey);
    await runSession(s.message, a.ctx, new AbortController().signal);
    expect(a.turns).toEqual([]);
    expect(a.sent).toEqual([{ t: "end", id: "s_blindtest01", error: "the sealed request did not open with this provider's key", code: "sealed_request_invalid" }]);
  });
});
