// The fabric to every coordinator on a NATS cluster (`--nats URL[,URL]`, DESIGN §7): the gateway's copy merges
// all coordinators' directory feeds, a placement goes to the coordinator holding the chosen provider (NATS says
// "no responders" at once when none does), and what comes back arrives on this gateway's own subject. Bodies are
// the WebSocket's JSON, sealed frames included, byte for byte. What a coordinator publishes is taken only with the
// signature of a coordinator key this gateway trusts (nats-signatures.ts): anyone else who can publish on NATS is
// heard by no gateway (DESIGN §11).
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import { headers, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { readToGateway, type FromGateway, type ToGateway } from "../../src/wire/gateway.ts";
import type { Fabric, FabricHandlers, FabricLink } from "./fabric.ts";
import { CoordinatorFeeds } from "./nats-feeds.ts";
import {
  AFFINITY_SUBJECT, ALL_FEEDS, AUDIT_SUBJECT, coordinatorSubject, FEED_QUIET_MS, feedSubject, gatewaySubject, H_ASK, H_FROM, HELLO_SUBJECT, PING_MS, providerSubject,
} from "../../src/wire/nats.ts";
import { readAffinity, readAuditHint } from "./nats-affinity.ts";
import { CoordinatorSignatures } from "./nats-signatures.ts";
import { AwakeClock } from "../../src/link/awake-clock.ts";
import { askTwice, isNoResponders, NoLongerAsked } from "./nats-ask.ts";

/** How long NATS may be away (a node of the cluster died, the client moves to another) before requests fail 502. */
const DOWN_GRACE_MS = 2_000;
/**
 * A placement the coordinator has not acknowledged in this long was lost (a NATS node died with it in flight): it
 * is cancelled there, in case it did arrive, and routed again, so no request waits on a message that never came.
 */
const REQUEST_TIMEOUT_MS = 5_000;
/** Dropped messages are logged at most once in this long, with how many were dropped since the last line. */
const DROP_LOG_MS = 10_000;

/** A session this gateway placed: where it went, and whether any of its frames came back (then it may not hop). */
interface Placed {
  provider: string;
  coordinator?: string;
  relayed: boolean;
}

export interface NatsFabricOptions {
  /** Whether a coordinator's directory key is one this gateway trusts (coordinator-keys.ts). */
  trusted(key: string): boolean;
  log: Logger;
}

export class NatsFabric implements Fabric {
  /** This gateway's id: its subject is svc.g.<id>. */
  readonly id = `g_${randomBytes(9).toString("base64url")}`;

  constructor(
    private readonly nc: NatsConnection,
    readonly where: string,
    private readonly options: NatsFabricOptions,
  ) {}

  connect(handlers: FabricHandlers): FabricLink {
    const { nc, id } = this;
    const signatures = new CoordinatorSignatures(this.options.trusted);
    let dropped = 0;
    let droppedLogged = 0;
    /** A coordinator's message, once its signature holds; undefined (and counted) when it does not. */
    const signed = (msg: Msg) => {
      const verdict = signatures.check(msg.subject, msg.headers, msg.data);
      if (verdict.ok) return verdict;
      dropped++;
      if (Date.now() - droppedLogged >= DROP_LOG_MS) {
        droppedLogged = Date.now();
        this.options.log.warn({ subject: msg.subject, why: verdict.why, dropped }, "a message on NATS that no trusted coordinator signed was dropped");
        dropped = 0;
      }
      return undefined;
    };
    const from = () => {
      const h = headers();
      h.set(H_FROM, id);
      return h;
    };
    const sessions = new Map<string, Placed>();
    const feeds = new CoordinatorFeeds({
      emit: (message) => handlers.message(message),
      ask: (c) => nc.publish(coordinatorSubject(c), "", { headers: withAsk(from(), "snap") }),
    });
    /** What the feeds' silences are timed on: a stall of this gateway is no coordinator's silence. */
    const clock = new AwakeClock();
    let open = false;
    let closed = false;
    let downTimer: NodeJS.Timeout | undefined;

    /** Session `sid` will hear nothing more: it ends here (re-routed when nothing was relayed), and is cancelled there. */
    const end = (sid: string, s: Placed, reason: string) => {
      sessions.delete(sid);
      if (s.coordinator !== undefined) nc.publish(coordinatorSubject(s.coordinator), JSON.stringify({ t: "cancel", id: sid }), { headers: withAsk(from(), "cancel") });
      handlers.message({ t: "gone", id: sid, started: s.relayed, reason });
    };
    /** Coordinator `c` is gone: its providers leave the copy, its sessions end. */
    const lose = (c: string, reason: string) => {
      feeds.forget(c);
      for (const [sid, s] of [...sessions]) if (s.coordinator === c) end(sid, s, reason);
    };
    const up = () => {
      open = true;
      handlers.open();
      handlers.message({ t: "directory", reset: true, put: [], gone: [] });
      nc.publish(HELLO_SUBJECT, "", { headers: from() });
    };
    const down = (error: string) => {
      if (!open) return;
      open = false;
      feeds.clear();
      sessions.clear();
      handlers.closed({ error, wasOpen: true, ...(closed ? {} : { retryMs: DOWN_GRACE_MS }) });
    };

    const own = nc.subscribe(gatewaySubject(id), { callback: (_err, msg) => onOwn(msg) });
    const onOwn = (msg: Msg) => {
      // while down, nothing reaches the client: its copy and sessions were cleared, and come back with the link
      if (!open) return;
      const from = signed(msg);
      if (!from) return;
      const c = from.from;
      const message = readToGateway(msg.string());
      if (!message) return handlers.message(undefined);
      feeds.heard(c, clock.now());
      if (message.t === "directory" && from.ask === "snap") return feeds.snapshot(c, Number(from.seq), message, clock.now());
      if (message.t !== "directory" && message.t !== "attestation") {
        const s = sessions.get(message.id);
        if (s && message.t === "frame") s.relayed = true;
        else if (s && message.t !== "started") sessions.delete(message.id);
      }
      handlers.message(message);
    };
    const feed = nc.subscribe(ALL_FEEDS, {
      callback: (_err, msg) => {
        if (!open) return;
        const from = signed(msg);
        if (!from) return;
        const c = from.from;
        const seq = Number(from.seq);
        // a feed is its own sender's: another coordinator's key cannot speak on it
        if (msg.subject !== feedSubject(c) || !Number.isInteger(seq)) return;
        if (msg.data.length === 0) return feeds.feed(c, seq, undefined, clock.now());
        const message = readToGateway(msg.string());
        if (message?.t !== "directory") return handlers.message(undefined);
        feeds.feed(c, seq, message, clock.now());
      },
    });
    // the other gateways' placements, so a conversation's next turn finds its provider through any of them
    const affinity = nc.subscribe(AFFINITY_SUBJECT, {
      callback: (_err, msg) => {
        if (!open || msg.headers?.get(H_FROM) === id) return;
        const placed = readAffinity(msg.data);
        if (placed) handlers.affinity?.(placed.k, placed.p);
      },
    });
    // the other gateways' audits: read the shared store now rather than at the next poll
    const audits = nc.subscribe(AUDIT_SUBJECT, {
      callback: (_err, msg) => {
        if (!open || msg.headers?.get(H_FROM) === id) return;
        const audit = readAuditHint(msg.data);
        if (audit) handlers.audit?.(audit);
      },
    });
    // each ping proves this gateway alive to the coordinator; "no responders" twice, RECHECK_MS apart, proves it dead
    let due = performance.now() + PING_MS;
    const pinger = setInterval(() => {
      clock.woke(due, PING_MS / 2);
      due = performance.now() + PING_MS;
      if (!open) return;
      // judged after this turn's network reads: a feed's beat already in the socket counts
      setImmediate(() => {
        if (open) for (const c of feeds.quiet(clock.now(), FEED_QUIET_MS)) lose(c, "its coordinator went quiet");
      });
      for (const c of feeds.coordinators()) if (!rechecking.has(c)) ping(c);
    }, PING_MS);
    /** Coordinators being asked once more: the pings skip them meanwhile. */
    const rechecking = new Set<string>();
    const ping = (c: string): void => {
      askTwice(nc, coordinatorSubject(c), "", { timeout: FEED_QUIET_MS, headers: withAsk(from(), "ping") }, () => open, () => rechecking.add(c)).then(
        () => {
          rechecking.delete(c);
          feeds.heard(c, clock.now());
        },
        (err: unknown) => {
          rechecking.delete(c);
          if (open && isNoResponders(err)) lose(c, "its coordinator is gone");
        },
      );
    };
    pinger.unref();

    void (async () => {
      for await (const status of nc.status()) {
        if (status.type === "disconnect") {
          clearTimeout(downTimer);
          downTimer = setTimeout(() => down("NATS is unreachable"), DOWN_GRACE_MS);
        } else if (status.type === "reconnect") {
          clearTimeout(downTimer);
          // whatever was missed meanwhile: the feeds' numbers skip and ask again, a new hello fetches them all, and
          // a session that may have lost a message on this subject ends (re-routed when nothing of it was relayed)
          if (!open) up();
          else {
            nc.publish(HELLO_SUBJECT, "", { headers: from() });
            for (const [sid, s] of [...sessions]) end(sid, s, "this gateway's NATS connection dropped");
          }
        }
      }
    })();
    void nc.closed().then(() => down("NATS connection closed"));
    queueMicrotask(() => !closed && !nc.isClosed() && up());

    const send = (message: FromGateway): void => {
      const body = JSON.stringify(message);
      if (message.t === "cancel") {
        const s = sessions.get(message.id);
        sessions.delete(message.id);
        if (s?.coordinator !== undefined) nc.publish(coordinatorSubject(s.coordinator), body, { headers: withAsk(from(), "cancel") });
        return;
      }
      const provider = message.t === "place" ? message.provider : message.id;
      const placed: Placed | undefined = message.t === "place" ? { provider, coordinator: feeds.ownerOf(provider), relayed: false } : undefined;
      if (placed) sessions.set(message.id, placed);
      // asked once more on "no responders" while the gateway is up and the placement still waits
      const still = () => open && (message.t === "attestation" || sessions.get(message.id) === placed);
      askTwice(nc, providerSubject(provider), body, { timeout: REQUEST_TIMEOUT_MS, headers: from() }, still).then(
        (reply) => {
          if (placed) placed.coordinator = reply.headers?.get(H_FROM) ?? placed.coordinator;
        },
        (err: unknown) => {
          if (err instanceof NoLongerAsked) return;
          // no responders twice: no coordinator holds that provider any more (the copy was behind); else it was lost
          if (message.t === "attestation") return isNoResponders(err) && handlers.message({ t: "attestation", rid: message.rid, evidence: null });
          const s = sessions.get(message.id);
          if (s && !s.relayed) end(message.id, s, isNoResponders(err) ? "no coordinator holds the provider" : "the placement was lost");
        },
      );
    };

    return {
      get connected() {
        return open;
      },
      send: (message) => {
        if (!open) return false;
        send(message);
        return true;
      },
      shareAffinity: (key, provider) => {
        if (open) nc.publish(AFFINITY_SUBJECT, JSON.stringify({ k: key, p: provider }), { headers: from() });
      },
      shareAudit: (audit) => {
        if (open) nc.publish(AUDIT_SUBJECT, JSON.stringify({ a: audit }), { headers: from() });
      },
      close: async () => {
        closed = true;
        clearInterval(pinger);
        clearTimeout(downTimer);
        own.unsubscribe();
        feed.unsubscribe();
        affinity.unsubscribe();
        audits.unsubscribe();
        down("closed");
      },
    };
  }
}

function withAsk(h: ReturnType<typeof headers>, ask: string): ReturnType<typeof headers> {
  h.set(H_ASK, ask);
  return h;
}
