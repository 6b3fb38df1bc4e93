// The coordinator's side of the NATS fabric (DESIGN §7, gateway/fabric/nats.ts): its directory feed broadcast
// on its own subject (a snapshot to a gateway that asks), placements taken on each held provider's subject, and
// each gateway served by the same endpoint as a WebSocket or embedded one. A provider held here is claimed with
// an epoch from shared state (claim-epochs.ts), never a clock: when another coordinator claims it with a greater
// one, this one closes its own, older connection. Until the epoch comes (the database away), the hold serves but
// yields to any claim it hears, so it can never beat a connection that got its epoch. Every message it publishes to
// gateways (its feed, and what it sends on a gateway's subject) is signed with its directory key (DESIGN §11), which
// the gateways are configured with; replies to their requests go to inboxes only the asker knows.
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import { headers, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { SIGNATURE_DOMAINS, type Signer } from "../../src/crypto/signing.ts";
import { readFromGateway, type ToGateway } from "../../src/wire/gateway.ts";
import {
  ALL_CLAIMS, claimSubject, coordinatorSubject, FEED_BEAT_MS, feedSubject, gatewaySubject, GATEWAY_QUIET_MS, H_ASK, H_EPOCH, H_FROM, H_KEY, H_N, H_SEQ,
  H_SIG, HELLO_SUBJECT, providerSubject, signedPart, SUBJECT_TOKEN,
} from "../../src/wire/nats.ts";
import type { Attestations } from "./attestations.ts";
import { EPOCH_RETRY_MAX_MS, EPOCH_RETRY_MS, yieldsTo, type ClaimEpochs } from "./claim-epochs.ts";
import { gatewayEndpoint, type GatewayEndpoint } from "./gateway-link.ts";
import type { FeedPort } from "./directory-feed.ts";
import type { Registry } from "./registry.ts";
import { AwakeClock } from "../../src/link/awake-clock.ts";

/** What the NATS side reaches of a coordinator. */
export interface CoordinatorCore {
  registry: Registry;
  attestations: Attestations;
  log: Logger;
  /** Orders claims across coordinators (the shared database). */
  epochs: ClaimEpochs;
  /** Its directory key: what it publishes to gateways is signed with it. */
  key: Signer;
}

export interface NatsGateways {
  /** This coordinator's id on the fabric. */
  readonly id: string;
  /** Gateways it serves now. */
  readonly gateways: number;
  close(): void;
}

interface Hold {
  epoch: number | undefined;
  sub: Subscription;
}

/** Claims are held to one queue group per provider subject, so a placement reaches one holder even mid-race. */
const QUEUE = "svc";

/** What a coordinator's message may say besides its body: the feed's number, what it answers. */
export type FeedHeaders = { [H_SEQ]?: string; [H_ASK]?: string };

/**
 * Publishes to gateways as coordinator `from`, each message signed with `key` over the subject, the sender, its
 * number, the feed's number and ask, and the body (src/wire/nats.ts signedPart). Every message of this run is
 * numbered once (the id is new each run), so a gateway can tell a replay.
 */
export function signedPublisher(nc: NatsConnection, from: string, key: Signer): (subject: string, text: string, extra?: FeedHeaders) => void {
  let n = 0;
  return (subject, text, extra = {}) => {
    const body = Buffer.from(text);
    const signed = { from, key: key.publicKey, n: ++n, seq: extra[H_SEQ], ask: extra[H_ASK] };
    const h = headers();
    for (const [k, v] of Object.entries({ [H_FROM]: from, ...extra, [H_KEY]: key.publicKey, [H_N]: String(signed.n) })) h.set(k, v);
    h.set(H_SIG, key.sign(SIGNATURE_DOMAINS.fabric, signedPart(subject, signed, body)));
    nc.publish(subject, body, { headers: h });
  };
}

export function serveGatewaysOnNats(nc: NatsConnection, { registry, attestations, log, epochs, key }: CoordinatorCore): NatsGateways {
  const id = `c_${randomBytes(9).toString("base64url")}`;
  const hdrs = (extra: Record<string, string> = {}): MsgHdrs => {
    const h = headers();
    h.set(H_FROM, id);
    for (const [k, v] of Object.entries(extra)) h.set(k, v);
    return h;
  };
  const publish = signedPublisher(nc, id, key);
  let seq = 0;
  /** Providers whose socket this coordinator holds: their claim's epoch (none yet while it is being fetched) and placement subscription. */
  const held = new Map<string, Hold>();
  const gateways = new Map<string, { endpoint: GatewayEndpoint; heard: number }>();
  /** What the gateways' silences are timed on: a stall of this coordinator is no gateway's silence. */
  const clock = new AwakeClock();

  const claim = (pid: string, epoch: number) => nc.publish(claimSubject(pid), "", { headers: hdrs({ [H_EPOCH]: String(epoch) }) });
  /** Asks the shared state for this hold's epoch; while it is away, again, less often each time, as long as the hold lasts. */
  const fetchEpoch = (pid: string, hold: Hold, wait = EPOCH_RETRY_MS) => {
    epochs.next().then(
      (epoch) => {
        if (held.get(pid) !== hold) return;
        hold.epoch = epoch;
        claim(pid, epoch);
      },
      (err: unknown) => {
        if (held.get(pid) !== hold) return;
        if (wait === EPOCH_RETRY_MS) log.warn({ provider: pid, err: (err as Error).message }, "no claim epoch from the database yet; the provider is served and claimed once it answers");
        // a closed hold is not held, so the timer then finds nothing to do
        setTimeout(() => fetchEpoch(pid, hold, Math.min(wait * 2, EPOCH_RETRY_MAX_MS)), wait).unref();
      },
    );
  };
  const hold = (pid: string) => {
    if (held.has(pid) || !SUBJECT_TOKEN.test(pid)) return;
    const entry: Hold = { epoch: undefined, sub: nc.subscribe(providerSubject(pid), { queue: QUEUE, callback: (_err, msg) => onPlacement(msg) }) };
    held.set(pid, entry);
    fetchEpoch(pid, entry);
  };
  const release = (pid: string) => {
    held.get(pid)?.sub.unsubscribe();
    held.delete(pid);
  };

  // the broadcast: every gateway's copy learns each change once, from this coordinator's subject
  let subscribing = true;
  const broadcast: FeedPort = {
    send: (message) => {
      if (message.t !== "directory") return;
      for (const e of message.put) hold(e.id);
      for (const pid of message.gone) release(pid);
      if (subscribing) return;
      publish(feedSubject(id), JSON.stringify(message), { [H_SEQ]: String(++seq) });
    },
  };
  registry.feed.subscribe(broadcast);
  subscribing = false;

  /** The whole directory, to one gateway that asked, numbered with the last delta it already holds. */
  const snapshot = (g: string) => {
    const port: FeedPort = {
      send: (message) => publish(gatewaySubject(g), JSON.stringify(message), { [H_SEQ]: String(seq), [H_ASK]: "snap" }),
    };
    registry.feed.subscribe(port);
    registry.feed.unsubscribe(port);
  };

  /** Gateway `g`'s endpoint: its sessions' messages go to its subject, and of the feed only its placed acks. */
  const gateway = (g: string) => {
    let known = gateways.get(g);
    if (known) {
      known.heard = clock.now();
      return known.endpoint;
    }
    const send = (message: ToGateway) => {
      if (message.t === "directory") {
        if (message.placed === undefined) return;
        message = { t: "directory", put: [], gone: [], placed: message.placed };
      }
      publish(gatewaySubject(g), JSON.stringify(message));
    };
    known = { endpoint: gatewayEndpoint(send, registry, attestations, log.child({ gateway: g })), heard: clock.now() };
    gateways.set(g, known);
    log.info({ gateway: g }, "gateway linked over NATS");
    return known.endpoint;
  };

  const sender = (msg: Msg): string | undefined => {
    const g = msg.headers?.get(H_FROM);
    return g !== undefined && SUBJECT_TOKEN.test(g) ? g : undefined;
  };
  function onPlacement(msg: Msg) {
    const g = sender(msg);
    const message = g === undefined ? undefined : readFromGateway(msg.string());
    if (g === undefined || message === undefined || message.t === "cancel") return log.warn("a placement on NATS that is not one; dropped");
    msg.respond("", { headers: hdrs() });
    gateway(g).receive(message);
  }

  const subs = [
    nc.subscribe(coordinatorSubject(id), {
      callback: (_err, msg) => {
        const g = sender(msg);
        if (g === undefined) return;
        const ask = msg.headers?.get(H_ASK);
        if (ask === "ping") {
          const known = gateways.get(g);
          if (known) known.heard = clock.now();
          msg.respond("");
        } else if (ask === "snap") snapshot(g);
        else if (ask === "cancel" && gateways.has(g)) {
          const message = readFromGateway(msg.string());
          if (message?.t === "cancel") gateway(g).receive(message);
        }
      },
    }),
    nc.subscribe(HELLO_SUBJECT, {
      callback: (_err, msg) => {
        const g = sender(msg);
        if (g !== undefined) snapshot(g);
      },
    }),
    nc.subscribe(ALL_CLAIMS, {
      callback: (_err, msg) => {
        const other = sender(msg);
        const pid = msg.subject.slice(claimSubject("").length);
        const mine = held.get(pid);
        if (other === undefined || other === id || mine === undefined) return;
        const theirs = Number(msg.headers?.get(H_EPOCH));
        if (!Number.isFinite(theirs)) return;
        if (yieldsTo(mine.epoch, theirs, id, other)) {
          log.info({ provider: pid, coordinator: other }, "provider claimed by a newer connection at another coordinator; closing ours");
          release(pid);
          registry.evict(pid, "the provider connected to another coordinator", "a newer connection to another coordinator holds this provider");
        } else if (mine.epoch !== undefined) claim(pid, mine.epoch); // ours is newer: the other holder closes its own on hearing it
      },
    }),
  ];

  const beat = () => publish(feedSubject(id), "", { [H_SEQ]: String(seq) });
  beat();
  let due = performance.now() + FEED_BEAT_MS;
  const timer = setInterval(() => {
    beat();
    clock.woke(due, FEED_BEAT_MS / 2);
    due = performance.now() + FEED_BEAT_MS;
    // judged after this turn's network reads: a ping already in the socket counts
    setImmediate(() => {
      const now = clock.now();
      for (const [g, known] of [...gateways]) {
        if (now - known.heard <= GATEWAY_QUIET_MS) continue;
        gateways.delete(g);
        known.endpoint.close();
        log.info({ gateway: g }, "gateway went quiet on NATS; its sessions are cancelled");
      }
    });
  }, FEED_BEAT_MS);
  timer.unref();

  return {
    id,
    get gateways() {
      return gateways.size;
    },
    close: () => {
      clearInterval(timer);
      registry.feed.unsubscribe(broadcast);
      for (const sub of subs) sub.unsubscribe();
      for (const pid of [...held.keys()]) release(pid);
      for (const { endpoint } of gateways.values()) endpoint.close();
      gateways.clear();
    },
  };
}
