// createSealedFetch (DESIGN §10, issue 42): a fetch for the OpenAI SDKs that makes svc's routes gateway-blind. Each
// request's body is parsed by the gateway's own layer (src/openai parseRoute), sealed to up to three candidates whose
// evidence the caller checked itself (candidates.ts), and posted as application/svc-sealed+json; the relayed lines
// are opened in order from the candidate that answered, read by the same answer side as the gateway's
// (src/session/answer-reader.ts), the receipt checked against that candidate and the alias's catalog pin, and the
// answer shaped (src/openai/answer-shaper.ts) into the bytes the normal path returns. It fails closed: it never sends
// a plaintext body, and anything that does not check is answered as an error envelope that names why (503
// provider_unavailable when no provider passes the caller's checks, 502 sealed_answer_invalid for an answer that
// does not open or check) marked `x-should-retry: false`: a thrown fetch would reach the SDK as a retried
// "Connection error." with the reason lost. A stream already answered 200 errors with that ApiError instead.
import { SEALED_FRAMES_TYPE, SEALED_REQUEST_TYPE, fromBase64url, type Clear } from "../src/blind/format.ts";
import { LineReader, type RelayLine } from "../src/blind/lines.ts";
import { FrameOpener, sealForCandidates, type SealedForCandidates } from "../src/blind/seal.ts";
import { CatalogSchema, type Catalog, type CatalogEntry } from "../src/catalog.ts";
import { ApiError, ERROR_CODES, type ErrorCode, type ErrorEnvelope } from "../src/errors.ts";
import { shaperOf, type AnswerShaper, type SseEvent } from "../src/openai/answer-shaper.ts";
import { RECEIPT_NONCE_HEADER } from "../src/openai/chat-request.ts";
import { readJsonBody } from "../src/openai/json-body.ts";
import { parseRoute, type RouteRequest } from "../src/openai/route-request.ts";
import { ROUTE_PATHS, type RouteKind } from "../src/openai/route-kinds.ts";
import { verdictHeaders, verdictOf } from "../src/openai/shapes.ts";
import { DONE_LINE, sseEvent } from "../src/openai/sse-text.ts";
import { canonicalJson } from "../src/receipt/canonical-json.ts";
import type { AnswerPiece, AnswerRecord } from "../src/receipt/answer-record.ts";
import type { Receipt } from "../src/receipt/receipt.ts";
import { AnswerReader, providerFault } from "../src/session/answer-reader.ts";
import { answerTokenCap } from "../src/session/sealed-request.ts";
import { anchorsFrom } from "../src/trust/anchors.ts";
import { checkEvidence } from "../src/trust/attestation.ts";
import { BUNDLED_CATALOG } from "./bundled-catalog.ts";
import { CandidateChooser, GatewayAnswered, type Candidate } from "./candidates.ts";
import { enginesFor, type Engines } from "./engines.ts";
import type { SealedFetchOptions } from "./public-types.js";

// the options are declared once, in the package's public types (no zod or src/ type in a caller's view)
export type { SealedFetchOptions };

const KINDS = new Map<string, RouteKind>(Object.entries(ROUTE_PATHS).map(([kind, path]) => [path.replace(/^\/v1/, ""), kind as RouteKind]));
/** The runtime's fastest primitives (client/engines.ts), chosen once, on first use (an import of the package costs nothing). */
let chosen: Promise<Engines> | undefined;
const engines = () => (chosen ??= enginesFor());
const signatureOf = ({ signature }: Engines) => (signature === undefined ? {} : { signature });

/** A fetch that sends svc's OpenAI routes gateway-blind; other GETs (listings) pass through, any other body is refused. */
export function createSealedFetch(options: SealedFetchOptions): typeof globalThis.fetch {
  // HPKE's key schedule runs on WebCrypto, which a browser gives only a secure context: fail closed, saying so, at once
  if (globalThis.crypto?.subtle === undefined) {
    throw new Error("svc sealed fetch: WebCrypto (crypto.subtle) is unavailable: serve this page over https (or from localhost); nothing can be sealed");
  }
  const base = options.baseURL.replace(/\/+$/, "");
  const send = options.fetch ?? globalThis.fetch.bind(globalThis);
  const catalog = options.catalog === undefined ? BUNDLED_CATALOG : CatalogSchema.parse(options.catalog);
  const chooser = new CandidateChooser({
    floor: options.floor ?? "process",
    ...anchorsFrom({ roots: options.trustedRoots ?? [], releaseKeys: options.releaseKeys ?? [] }),
    knownKeys: new Map(Object.entries(options.knownKeys ?? {})),
  }, {
    ...(options.listingMaxAgeMs === undefined ? {} : { listingMaxAgeMs: options.listingMaxAgeMs }),
    check: async (evidence, anchors, at) => checkEvidence(evidence, anchors, at, signatureOf(await engines())),
  });
  const auth: Record<string, string> = options.apiKey === undefined ? {} : { authorization: `Bearer ${options.apiKey}` };
  const get = (path: string) => send(`${base}${path}`, { headers: { ...auth, accept: "application/json" } });

  return async (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    const path = url.href.startsWith(`${base}/`) ? url.href.slice(base.length).split("?")[0]! : undefined;
    const kind = path === undefined ? undefined : KINDS.get(path);
    if (request.method === "GET" && request.body === null) return send(request);
    if (kind === undefined) {
      return refusal(new ApiError("route_not_found", `svc sealed fetch: ${request.method} ${url.pathname} is not a route it seals (${Object.values(ROUTE_PATHS).join(", ")}); nothing was sent`));
    }
    if (request.method !== "POST") return refusal(new ApiError("method_not_allowed", `svc sealed fetch: ${url.pathname} is sealed only as POST, not ${request.method}; nothing was sent`));
    const headers = { ...auth, ...(request.headers.get("authorization") === null ? {} : { authorization: request.headers.get("authorization")! }) };
    try {
      return await blind(kind, new Uint8Array(await request.arrayBuffer()), request.headers.get(RECEIPT_NONCE_HEADER) ?? undefined, request.signal, {
        catalog, chooser, options, post: (body) => send(url.href, { method: "POST", headers: { ...headers, "content-type": SEALED_REQUEST_TYPE }, body, signal: request.signal }), get,
      });
    } catch (err) {
      if (err instanceof GatewayAnswered) return err.response;
      if (err instanceof ApiError) return refusal(err);
      throw err;
    }
  };
}

interface Session {
  catalog: Catalog;
  chooser: CandidateChooser;
  options: SealedFetchOptions;
  post: (body: string) => Promise<Response>;
  get: (path: string) => Promise<Response>;
}

/** One request, sealed: parsed and refused here as the gateway would, sealed, posted, and its answer opened. */
async function blind(kind: RouteKind, bytes: Uint8Array, receiptNonce: string | undefined, signal: AbortSignal, s: Session): Promise<Response> {
  let request: RouteRequest;
  try {
    const nonce = Array.from(globalThis.crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
    // complete, as an auditing gateway completes every request it seals (issue 43): top_logprobs and a seed always
    // sealed, so an audit looks like this caller's request; the caller sees logprobs only if it asked (the shaper)
    const complete = { seed: globalThis.crypto.getRandomValues(new Uint32Array(1))[0]! };
    request = parseRoute(kind, readJsonBody(bytes), { catalog: s.catalog, nonce, receiptNonce, reasoningFormat: s.options.reasoningFormat ?? "none", complete });
  } catch (err) {
    if (err instanceof ApiError) return errorResponse(err);
    throw err;
  }
  const { entry, body } = request;
  const pin = request.pin ?? s.options.provider?.toLowerCase();
  const candidates = await s.chooser.choose(s.get, entry.alias, pin);
  const plaintext = new TextEncoder().encode(canonicalJson(body));
  const clear: Omit<Clear, "request_sha256"> = {
    kind, alias: entry.alias, stream: request.stream,
    max_tokens: kind === "embeddings" ? body.input!.length : answerTokenCap(body),
  };
  const sealed = await sealForCandidates((await engines()).suite, plaintext, clear, candidates.map((c) => ({ provider: c.id, publicKey: c.sealingKey })));
  signal.throwIfAborted();
  const res = await s.post(JSON.stringify(sealed.envelope));
  const shaper = shaperOf(request);
  // a request its candidates could not take, or whose answer does not check: the next one lists afresh
  const failed = () => s.chooser.forgetListing();
  // the gateway's own failure before it relayed anything: an ordinary envelope with its status, as the normal path
  // sends it, but for a stream's failure to find or reach a provider, which the normal path sends after its head
  if (res.status !== 200) {
    failed();
    return request.stream && shaper.stream !== undefined ? await afterHead(res, shaper) : res;
  }
  if (res.headers.get("content-type")?.split(";")[0]?.trim() !== SEALED_FRAMES_TYPE || res.body === null) {
    failed();
    void res.body?.cancel();
    throw invalid(`the gateway answered ${res.headers.get("content-type") ?? "no content type"}, not sealed frames`);
  }
  const answer = new RelayedAnswer(res.body, sealed, candidates, request, entry, plaintext, failed);
  // the gateway's id for the request, as on any answer of its, to quote in a report
  const requestId = res.headers.get("x-request-id");
  const headers: Record<string, string> = requestId === null ? {} : { "x-request-id": requestId };
  if (request.stream && shaper.stream !== undefined) return streamed(answer, shaper, headers);
  const end = await answer.finish(() => undefined);
  if (end instanceof ApiError) return errorResponse(shaper.error(end), headers);
  return json(200, shaper.whole(end.answer, end.receipt), { ...headers, ...verdictHeaders(verdictOf(end.receipt)) });
}

/** The provider side's failures, which a normal stream reports after its head (SPEC §3); any other stays as it came. */
const AFTER_HEAD = new Set(["provider_unavailable", "directory_unavailable", "provider_error"]);

async function afterHead(res: Response, shaper: AnswerShaper): Promise<Response> {
  const text = await res.text();
  let error: ApiError | undefined;
  try {
    const envelope = JSON.parse(text) as ErrorEnvelope;
    if (AFTER_HEAD.has(envelope.error.code)) error = envelopeError(envelope);
  } catch {
    error = undefined;
  }
  if (error === undefined) return new Response(text, { status: res.status, statusText: res.statusText, headers: res.headers });
  const stream = shaper.stream!;
  const { events } = stream.failing(shaper.error(error));
  const body = [...stream.opening(), ...events].map(({ data, event }) => sseEvent(data, event)).join("");
  const requestId = res.headers.get("x-request-id");
  return new Response(body, { status: 200, headers: { ...(requestId === null ? {} : { "x-request-id": requestId }), "content-type": "text/event-stream", "cache-control": "no-cache" } });
}

/** A stream as the normal path frames it: the opening, each piece as it opens, then the closing or the error. */
function streamed(answer: RelayedAnswer, shaper: AnswerShaper, headers: Record<string, string>): Response {
  const stream = shaper.stream!;
  const encoder = new TextEncoder();
  const events = (list: SseEvent[]) => encoder.encode(list.map(({ data, event }) => sseEvent(data, event)).join(""));
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      controller.enqueue(events(stream.opening()));
      try {
        const end = await answer.finish((piece) => controller.enqueue(events(stream.piece(piece))));
        const { events: last, done } = end instanceof ApiError ? stream.failing(shaper.error(end)) : stream.closing(end.receipt);
        controller.enqueue(events(last));
        if (done) controller.enqueue(encoder.encode(DONE_LINE));
        controller.close();
      } catch (err) {
        controller.error(err);
      }
    },
    cancel: () => answer.cancel(),
  });
  return new Response(body, { status: 200, headers: { ...headers, "content-type": "text/event-stream", "cache-control": "no-cache" } });
}

/** The relayed lines of one answer, opened in order from the one candidate that answers. */
class RelayedAnswer {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private current?: { provider: string; opener: FrameOpener; reader: AnswerReader; frames: number };

  constructor(
    body: ReadableStream<Uint8Array>,
    private readonly sealed: SealedForCandidates,
    private readonly candidates: readonly Candidate[],
    private readonly request: RouteRequest,
    private readonly entry: CatalogEntry,
    private readonly plaintext: Uint8Array,
    private readonly failed: () => void,
  ) {
    this.reader = body.getReader();
  }

  cancel(): void {
    void this.reader.cancel();
  }

  /**
   * Reads to the final frame, handing each piece on as it opens; resolves with the verified answer, or the error the
   * normal path would have answered with. Throws a sealed_answer_invalid ApiError naming what does not check.
   */
  async finish(onPiece: (piece: AnswerPiece) => void): Promise<{ receipt: Receipt; answer: AnswerRecord } | ApiError> {
    try {
      const end = await this.read(onPiece);
      if (end instanceof ApiError) this.failed();
      return end;
    } catch (err) {
      this.failed();
      this.cancel();
      throw err;
    }
  }

  private async read(onPiece: (piece: AnswerPiece) => void): Promise<{ receipt: Receipt; answer: AnswerRecord } | ApiError> {
    const lines = new LineReader();
    const decoder = new TextDecoder();
    for (;;) {
      const { done, value } = await this.reader.read();
      if (done) break;
      let read: RelayLine[];
      try {
        read = lines.push(decoder.decode(value, { stream: true }));
      } catch (err) {
        throw invalid(`the relayed answer is malformed (${(err as Error).message})`);
      }
      for (const line of read) {
        const end = await this.line(line, onPiece);
        if (end !== undefined) {
          this.cancel();
          return end;
        }
      }
    }
    throw invalid(this.current === undefined ? "the relayed answer ended before any provider answered" : "the relayed answer was cut before its final frame");
  }

  private async line(line: RelayLine, onPiece: (piece: AnswerPiece) => void): Promise<{ receipt: Receipt; answer: AnswerRecord } | ApiError | undefined> {
    switch (line.type) {
      case "keepalive":
        return undefined;
      case "error":
        return envelopeError(line.envelope);
      case "provider": {
        const candidate = this.candidates.find((c) => c.id === line.provider);
        if (candidate === undefined) throw invalid(`the gateway relayed an answer from provider ${line.provider}, which is not one of the request's candidates`);
        // a re-route comes before the first frame; after one, another provider could only splice answers
        if (this.current !== undefined && this.current.frames > 0) throw invalid("the gateway switched providers in the middle of an answer");
        const key = await this.sealed.answerKey(candidate.id);
        const { alias } = this.entry;
        const reader = new AnswerReader({ provider: candidate, ...(this.request.pin === undefined ? {} : { pin: this.request.pin }), entry: this.entry, body: this.request.body, requestSha256: this.sealed.envelope.request_sha256 }, signatureOf(await engines()));
        this.current = { provider: candidate.id, opener: new FrameOpener(key, alias, candidate.id), reader, frames: 0 };
        return undefined;
      }
      case "frame": {
        const current = this.current;
        if (current === undefined) throw invalid("the gateway relayed a frame before naming its provider");
        let text: string;
        try {
          text = await current.opener.open(fromBase64url(line.data), line.final);
        } catch (err) {
          throw invalid((err as Error).message);
        }
        current.frames++;
        const { pieces, end } = current.reader.read(text);
        for (const piece of pieces) if (!("text" in piece) || piece.text !== "") onPiece(piece);
        if (end === undefined) {
          if (line.final) throw invalid("the final frame holds no end of the answer");
          return undefined;
        }
        if (!line.final) throw invalid("an answer's end came in a frame not sealed final");
        switch (end.type) {
          case "done":
            return { receipt: end.receipt, answer: end.answer };
          case "receipt_invalid":
            throw invalid(`the receipt from provider ${current.provider} did not verify (${end.problems.join("; ")})`);
          case "fault":
            throw invalid(`provider ${current.provider} ${end.breach.why}`);
          case "report":
            return end.report.kind === "fault" ? providerFault(current.provider, end.report.why) : end.report.error;
        }
      }
    }
  }
}

/** What a gateway or provider did that the caller's checks refuse: 502 sealed_answer_invalid, naming it. */
const invalid = (why: string) => new ApiError("sealed_answer_invalid", `svc sealed fetch: ${why}; the answer is refused`);

/** The gateway's failure after the head, as the ApiError the normal path would have answered with at that point. */
function envelopeError({ error }: ErrorEnvelope): ApiError {
  if (!Object.hasOwn(ERROR_CODES, error.code)) throw invalid(`the gateway failed with an unknown code ${JSON.stringify(error.code).slice(0, 80)}`);
  return new ApiError(error.code as ErrorCode, error.message, { param: error.param });
}

/** A refusal made here, before or instead of an answer: the SPEC envelope, which no SDK should retry. */
function refusal(error: ApiError): Response {
  return errorResponse(error, { "x-should-retry": "false" });
}

function errorResponse(error: ApiError, headers: Record<string, string> = {}): Response {
  return json(error.status, error.toEnvelope(), { ...headers, ...(error.retryAfterS === undefined ? {} : { "retry-after": String(error.retryAfterS) }) });
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });
}
