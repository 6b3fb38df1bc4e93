// What a gateway and a coordinator say to each other (src/wire/agent.ts's gateway messages), whatever carries it
// (DESIGN §7): in-process objects to an embedded coordinator, a WebSocket to a remote one, or NATS to all of them.
import type { FromGateway, ToGateway } from "../../src/wire/gateway.ts";

export interface FabricClosed {
  /** Why, when the link failed rather than closed. */
  error?: string;
  /** Whether it had been open (a drop, rather than a failed attempt). */
  wasOpen: boolean;
  /** When the fabric tries again; undefined once it is closed for good. */
  retryMs?: number;
}

export interface FabricHandlers {
  open(): void;
  /** A message from the coordinator; undefined for one the fabric could not read. */
  message(message: ToGateway | undefined): void;
  closed(info: FabricClosed): void;
  /** Another gateway placed a conversation's affinity key on `provider` (on NATS only). */
  affinity?(key: string, provider: string): void;
  /** Another gateway concluded audit `id` (on NATS only): a hint to read the store, which holds what it did. */
  audit?(id: string): void;
}

/** The gateway's end of its link to a coordinator. */
export interface FabricLink {
  readonly connected: boolean;
  /** False when the link is down: the message was not sent. */
  send(message: FromGateway): boolean;
  /** Tells the other gateways this one placed affinity key `key` on `provider`; absent where no other gateway hears. */
  shareAffinity?(key: string, provider: string): void;
  /** Tells the other gateways this one concluded audit `id`, so they read the store now; absent where none hears. */
  shareAudit?(id: string): void;
  close(): Promise<void>;
}

export interface Fabric {
  /** Where it reaches, for logs and errors: a URL, or "embedded". */
  readonly where: string;
  connect(handlers: FabricHandlers): FabricLink;
}
