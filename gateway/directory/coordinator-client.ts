// The gateway's side of the coordinator (DESIGN §1): one WebSocket, kept up with jittered reconnects, that
// implements the Directory the routes use. Listing asks the coordinator; a session reserves a provider,
// seals the request to that provider's attested key, opens the sealed frames it sends back and verifies the
// receipt against what was sealed and relayed before anything calls the session done.
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import { WebSocket } from "ws";
import { Backoff } from "../../src/backoff.ts";
import { canonicalJson } from "../../src/canonical-json.ts";
import { ApiError, ERROR_CODES, type ErrorCode } from "../../src/errors.ts";
import { sha256Hex } from "../../src/hash.ts";
import { HANDSHAKE_TIMEOUT_MS, keepAlive } from "../../src/heartbeat.ts";
import { Mailbox } from "../../src/mailbox.ts";
import { verifyReceipt, type Receipt } from "../../src/receipt.ts";
import { jsonSender } from "../../src/ws-send.ts";
import { wsUrl } from "../../src/ws-url.ts";
import { sealRequest } from "../../src/seal.ts";
import { PROVIDER_ERROR_CODES, SessionFrameSchema, type SessionPlaintext } from "../../src/session-protocol.ts";
import { GATEWAY_MAX_FRAME_BYTES, GATEWAY_PATH, parseMessage, ToGatewaySchema, type FromGateway, type ProviderEntry, type ProviderRecord, type ToGateway } from "../../src/wire.ts";
import type { Directory, SessionEvent, SessionRequest } from "./directory.ts";

const LIST_TIMEOUT_MS = 5_000;

export class CoordinatorClient implements Directory {
  private ws?: WebSocket;
  private post: (message: FromGateway) => void = () => undefined;
  private closed = false;
  private nextRid = 0;
  private readonly lists = new Map<number, Mailbox<ProviderEntry[]>>();
  private readonly sessions = new Map<string, Mailbox<ToGateway>>();
  private readonly backoff = new Backoff();
  private retryTimer?: NodeJS.Timeout;

  constructor(
    readonly url: string,
    private readonly log: Logger,
    private readonly heartbeatMs: number,
  ) {
    this.connect();
  }

  private connect(): void {
    const ws = new WebSocket(wsUrl(this.url, GATEWAY_PATH), { maxPayload: GATEWAY_MAX_FRAME_BYTES, handshakeTimeout: HANDSHAKE_TIMEOUT_MS });
    this.ws = ws;
    this.post = jsonSender(ws);
    const stopHeartbeat = keepAlive(ws, this.heartbeatMs, () => ws.terminate());
    let opened = false;
    ws.on("open", () => {
      opened = true;
      this.backoff.reset();
      this.log.info({ coordinator: this.url }, "connected to the coordinator");
    });
    ws.on("message", (data) => this.dispatch(parseMessage(ToGatewaySchema, data)));
    ws.on("error", (err) => this.log.debug({ why: err.message }, "coordinator link error"));
    ws.on("close", () => {
      stopHeartbeat();
      for (const box of [...this.lists.values(), ...this.sessions.values()]) box.fail(this.unreachable());
      if (this.closed) return;
      const delay = this.backoff.next();
      // one warning when a live link drops; the retries that follow are routine
      if (opened) this.log.warn({ coordinator: this.url }, "coordinator link down; reconnecting");
      else this.log.debug({ coordinator: this.url, retry_ms: delay }, "coordinator unreachable; retrying");
      this.retryTimer = setTimeout(() => this.connect(), delay);
    });
  }

  get connected(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  private dispatch(message: ToGateway | undefined): void {
    if (!message) return this.log.warn("the coordinator sent an invalid message");
    if (message.t === "listed") this.lists.get(message.rid)?.post(message.providers);
    else this.sessions.get(message.id)?.post(message);
  }

  private send(message: FromGateway): void {
    if (this.ws?.readyState !== WebSocket.OPEN) throw this.unreachable();
    this.post(message);
  }

  /** SPEC §4.2's 502: what every request gets at once while the coordinator is down. */
  private unreachable(): ApiError {
    return new ApiError("directory_unavailable", `The coordinator at ${this.url} is unreachable; try again shortly.`);
  }

  async list(): Promise<ProviderRecord[]> {
    const rid = this.nextRid++;
    const box = new Mailbox<ProviderEntry[]>();
    this.lists.set(rid, box);
    try {
      this.send({ t: "list", rid });
      const providers = await box.take(AbortSignal.timeout(LIST_TIMEOUT_MS));
      return providers.map(record);
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw new ApiError("directory_unavailable", `The coordinator at ${this.url} did not answer in time; try again shortly.`);
    } finally {
      this.lists.delete(rid);
    }
  }

  async *open(request: SessionRequest, signal: AbortSignal): AsyncGenerator<SessionEvent, void, void> {
    const exclude: string[] = [];
    for (;;) {
      const id = `s_${randomBytes(12).toString("base64url")}`;
      const box = new Mailbox<ToGateway>();
      this.sessions.set(id, box);
      let finished = false;
      try {
        this.send({ t: "reserve", id, alias: request.entry.alias, floor: request.floor, pin: request.pin, exclude });
        const reply = await box.take(signal);
        if (reply.t === "rejected") throw rejection(reply.error);
        if (reply.t !== "reserved") throw new ApiError("provider_unavailable", "The chosen provider went offline; try again.");
        const provider = reply.provider;
        yield { type: "provider", provider: record(provider) };
        const plaintext: SessionPlaintext = {
          model: request.entry.alias,
          messages: request.messages,
          max_tokens: request.max_tokens,
          temperature: request.temperature,
          nonce: randomBytes(16).toString("hex"),
          client_nonce: request.clientNonce,
        };
        const sealedBytes = Buffer.from(canonicalJson(plaintext));
        const { sealed, frames } = await sealRequest(provider.sealing_key, id, sealedBytes);
        this.send({ t: "request", id, ...sealed });
        let content = "";
        for (;;) {
          const message = await box.take(signal);
          if (message.t === "gone") {
            finished = true;
            // an unpinned request that has not started may go to another machine; a pinned one never hops
            if (!message.started && request.pin === undefined) break;
            if (!message.started) throw new ApiError("provider_unavailable", `Provider ${provider.id} went offline before the session started.`);
            throw new ApiError("provider_error", `Provider ${provider.id} went offline mid-session; start a new request.`);
          }
          if (message.t === "end") {
            finished = true;
            throw new ApiError("provider_error", `Provider ${provider.id} ended the session without a result.`);
          }
          if (message.t !== "frame") continue;
          const frame = openFrame(() => frames.open(message.data), provider.id);
          if (frame.type === "delta") {
            content += frame.text;
            yield frame;
          } else if (frame.type === "error") throw reportedError(frame);
          else {
            finished = true;
            const expected = { request, provider, requestSha256: sha256Hex(sealedBytes), nonce: plaintext.nonce, content };
            yield { type: "done", receipt: this.verified(frame.receipt, expected) };
            return;
          }
        }
        exclude.push(provider.id);
      } finally {
        this.sessions.delete(id);
        // hung up, or failed on our side: the queue spot or the running session is given back at once
        if (!finished) this.post({ t: "cancel", id });
      }
    }
  }

  /** DESIGN §5: the receipt must be this provider's, for these sealed bytes and this relayed content. */
  private verified(raw: unknown, expected: Expected): Receipt {
    const { request, provider } = expected;
    const verdict = verifyReceipt(raw, {
      // the key the directory attested, never just the one inside the receipt
      signingKey: provider.signing_key,
      providerId: provider.id,
      ...(request.pin === undefined ? {} : { pin: request.pin }),
      trustLevel: provider.trust,
      ...(provider.serial === undefined ? {} : { serial: provider.serial }),
      model: request.entry,
      requestSha256: expected.requestSha256,
      content: expected.content,
      gatewayNonce: expected.nonce,
      clientNonce: request.clientNonce,
    });
    if (verdict.valid && verdict.receipt) return verdict.receipt;
    this.log.warn({ provider: provider.id, request_id: request.requestId, problems: verdict.problems }, `receipt from provider ${provider.id} rejected`);
    throw new ApiError(
      "receipt_invalid",
      `The receipt from provider ${provider.id} did not verify (${verdict.problems.join("; ")}), so its answer is not vouched for; retry the request.`,
    );
  }

  close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.ws?.terminate();
    return Promise.resolve();
  }
}

interface Expected {
  request: SessionRequest;
  provider: ProviderEntry;
  requestSha256: string;
  nonce: string;
  content: string;
}

function record(entry: ProviderEntry): ProviderRecord {
  const { signing_key: _signing, sealing_key: _sealing, ...rest } = entry;
  return rest;
}

function openFrame(open: () => string, providerId: string) {
  try {
    return SessionFrameSchema.parse(JSON.parse(open()));
  } catch {
    throw new ApiError("provider_error", `Provider ${providerId} sent a frame that does not open under this session's key.`);
  }
}

function rejection(error: { code: string; message: string; param: string | null }): ApiError {
  const code = (error.code in ERROR_CODES ? error.code : "provider_unavailable") as ErrorCode;
  return new ApiError(code, error.message, { param: error.param });
}

function reportedError(frame: { code: string; message: string; param: string | null }): ApiError {
  const code = (PROVIDER_ERROR_CODES as readonly string[]).includes(frame.code) ? (frame.code as ErrorCode) : "provider_error";
  return new ApiError(code, frame.message, { param: frame.param });
}
