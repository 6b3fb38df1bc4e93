// How one session's request reaches this agent and its frames go back (DESIGN §5, §10). Either the gateway sealed
// the request to this provider (one HPKE context per session, its frames under a key exported from it), or, in
// gateway-blind mode, the caller sealed it itself: its envelope opens with this provider's sealing key, the frames
// are padded and numbered under the answer key both ends export, the last one final, and beside that one the gateway
// reads in the clear only the signed receipt (counts and hashes) or the error's code.
import { openForCandidate, blindSuite, FrameSealer } from "../../src/blind/seal.ts";
import { readBlindPlaintext } from "../../src/blind/plaintext-checks.ts";
import { nodeDhkemX25519, NodeHkdfSha256 } from "../../src/crypto/hpke-node.ts";
import { openRequest, type FrameCipher } from "../../src/crypto/seal.ts";
import type { CatalogEntry } from "../../src/catalog.ts";
import { parseSessionPlaintext, type SessionFrame, type SessionPlaintext } from "../../src/session/sealed-request.ts";
import type { CacheScope, FromAgent, ToAgent } from "../../src/wire/agent.ts";
import type { AgentKeys } from "./identity.ts";

export type SessionMessage = Extract<ToAgent, { t: "session" }>;

export interface SessionChannel {
  /** The plaintext bytes as they opened: the receipt's request_sha256 covers exactly these. */
  readonly plaintext: Uint8Array;
  /** The caller takes the answer in one piece (not a stream). */
  readonly whole: boolean;
  /** The request, read from the plaintext by this channel's rules; throws the ApiError the caller gets, sealed. */
  request(entry: CatalogEntry): SessionPlaintext;
  /** Seals and sends one frame, in order; a `done` or `error` frame is the last. */
  send(frame: SessionFrame): void;
  /** Resolves once every frame sent has gone out. */
  drained(): Promise<void>;
}

/** The node suite: the agent's sealing key pair lives in node's KEM (src/crypto/seal.ts). */
const suite = blindSuite(nodeDhkemX25519(), new NodeHkdfSha256());

/** Opens the session's request with this provider's sealing key; throws when it was not sealed to it. */
export async function openChannel(message: SessionMessage, keys: AgentKeys, send: (message: FromAgent) => void, log: (line: string) => void): Promise<SessionChannel> {
  if ("blind" in message) return blindChannel(message, keys, send, log);
  const { plaintext, frames } = await openRequest(keys.sealing, message.id, message);
  return sealedChannel(message.id, plaintext, frames, message.whole === true, send);
}

function sealedChannel(id: string, plaintext: Buffer, frames: FrameCipher, whole: boolean, send: (message: FromAgent) => void): SessionChannel {
  return {
    plaintext,
    whole,
    request: () => parseSessionPlaintext(JSON.parse(plaintext.toString("utf8"))),
    send: (frame) => send({ t: "frame", id, data: frames.seal(JSON.stringify(frame)) }),
    drained: async () => undefined,
  };
}

async function blindChannel(message: Extract<SessionMessage, { blind: unknown }>, keys: AgentKeys, send: (message: FromAgent) => void, log: (line: string) => void): Promise<SessionChannel> {
  const { id, blind: envelope } = message;
  // the alias the coordinator routed on is the envelope's own, which the seal binds
  if (message.alias !== envelope.alias) throw new Error("the session's alias is not its envelope's");
  const { plaintext, answerKey } = await openForCandidate(suite, keys.sealing.keyPair, keys.providerId, envelope);
  const sealer = new FrameSealer(answerKey, envelope.alias, keys.providerId);
  let queue = Promise.resolve();
  return {
    plaintext,
    whole: !envelope.stream,
    request: (entry) => withScope(readBlindPlaintext(plaintext, envelope, entry), message.cache),
    send: (frame) => {
      const final = frame.type === "done" || frame.type === "error";
      // sealed now, so the frames are numbered in the order sent; they go out in that order too
      const sealing = sealer.seal(JSON.stringify(frame), final);
      const clear = !final ? {} : frame.type === "done" ? { final: true as const, receipt: clearReceipt(frame.receipt) } : { final: true as const, code: clearCode(frame) };
      queue = queue
        .then(async () => send({ t: "frame", id, data: Buffer.from(await sealing).toString("base64url"), ...clear }))
        .catch((err: Error) => log(`session ${id}: a frame was not sent: ${err.message}`));
    },
    drained: () => queue,
  };
}

/** The gateway's scope for the caller joins what the caller sealed, unless it asked that nothing be kept (`cache_prompt: false`). */
function withScope(request: SessionPlaintext, cache: CacheScope | undefined): SessionPlaintext {
  if (cache === undefined || request.cache_prompt === false) return request;
  return { ...request, cache_scope: cache.scope, ...(cache.owner === undefined ? {} : { cache_owner: cache.owner }) };
}

/** The receipt as the gateway reads it beside the final frame: an object (anything else it finds invalid as an empty one). */
function clearReceipt(receipt: unknown): Record<string, unknown> {
  return typeof receipt === "object" && receipt !== null && !Array.isArray(receipt) && Object.keys(receipt).length <= 64 ? (receipt as Record<string, unknown>) : {};
}

/** What the gateway reads of an error frame: its code, when it is one of ours in form; never the provider's text. */
function clearCode(frame: SessionFrame): string {
  return frame.type === "error" && /^[a-z_]{1,64}$/.test(frame.code) ? frame.code : "provider_error";
}
