// What a route handler gets: the gateway's parts, this request's response, id, hang-up signal and log line.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Catalog } from "../src/catalog.ts";
import type { Authenticator, Principal } from "./keys/auth.ts";
import type { Admission, Limiter } from "./keys/limiter.ts";
import type { TrustLevel } from "../src/receipt/rungs.ts";
import type { TrustAnchors } from "../src/trust/attestation.ts";
import type { Directory } from "./directory/directory.ts";
import type { GatewayMetrics } from "./metrics.ts";
import type { RequestLog } from "./request-log.ts";
import type { ReasoningFormat } from "../src/openai/tools-request.ts";
import type { CallerGone } from "./http/caller-gone.ts";
import type { ServerTiming } from "./http/server-timing.ts";
import type { RequestParser } from "./openai/request-parser.ts";
import type { SignIn } from "./web/routes.ts";
import type { UserKeys } from "./keys/user-keys.ts";
import type { OwnerOf, ScopeOf } from "./keys/cache-scope.ts";
import type { Auditor } from "./audit/auditor.ts";
import type { AuditRecords } from "./audit/records.ts";
import type { TrafficShapes } from "./audit/traffic-shape.ts";
import type { AuditStore } from "./keys/audit-store.ts";

export interface Gateway {
  catalog: Catalog;
  directory: Directory;
  floor: TrustLevel;
  /** `--attestation-roots` and `--release-keys`: what the page /chat offers a caller as a starting trust policy. */
  anchors: TrustAnchors;
  auth: Authenticator;
  /** Per-key rate limits and failed-authentication slowdown. */
  limiter: Limiter;
  /** The settings pages' sign-in; absent when no identity provider is configured. */
  signIn?: SignIn;
  /** The store's user keys: their usage and limits, with or without sign-in. */
  users: UserKeys;
  keepaliveMs: number;
  /** `--reasoning-format`: "parsed" returns `<think>` apart for requests that name no reasoning_format. */
  reasoningFormat: ReasoningFormat;
  bodyLimitBytes: number;
  metrics: GatewayMetrics;
  /** A caller's prompt-cache scope (DESIGN §9), keyed by the gateway secret. */
  scopeOf: ScopeOf;
  /** Whose scope it is, as a provider shares its cache out: one share per key. */
  ownerOf: OwnerOf;
  /** Parses every OpenAI route's body, off the event loop where it costs. */
  parser: RequestParser;
  /** `--audit`: every request is sealed complete, with logprobs and a seed (src/openai/chat-request.ts Completion). */
  completeRequests: boolean;
  /** `--audit` or `--audit-models`: the audit records the listings show, the audit key and failures' evidence; with `--audit-models`, the auditor, told of each ordinary placement. */
  audits?: Audits;
}

export interface Audits {
  auditor?: Auditor;
  /** With the auditor: the sketch of callers' request shapes its audits take (traffic-shape.ts). */
  shapes?: TrafficShapes;
  records: AuditRecords;
  barOf: (provider: string) => string | undefined;
  /** The audit key's public half (hex), which signs every failure's evidence. */
  key: string;
  store: AuditStore;
}

export interface RouteContext {
  gateway: Gateway;
  req: IncomingMessage;
  res: ServerResponse;
  requestId: string;
  /** When the request arrived (performance.now()). */
  started: number;
  /** Aborted when the caller hangs up (reason CallerGone) or the gateway's shutdown deadline passes (ApiError). */
  signal: AbortSignal;
  /** Aborts the signal with `why` and closes the connection: the caller is to be treated as gone. */
  hangUp: (why: CallerGone) => void;
  log: RequestLog;
  /** Who the bearer key belongs to. */
  principal: Principal;
  /** The key's admission under its rate limits; tokens from the verified receipt are charged to it. */
  admission: Admission;
  /** Server-Timing: each step's duration, sent with the answer. */
  timing: ServerTiming;
}
