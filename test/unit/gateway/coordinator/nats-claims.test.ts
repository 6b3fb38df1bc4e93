// docs/architecture.md "Replicas on NATS", ownership, at one coordinator's NATS side (nats-gateways.ts) on a fake
// connection and fake claim epochs: a provider it takes is claimed with the epoch the shared state gives (no clock);
// a greater claim from another coordinator closes ours, a smaller one is answered with ours; a hold still waiting
// for its epoch yields to any claim; and while the shared state is away the epoch is asked for again.
import type { NatsConnection } from "@nats-io/transport-node";
import { headers } from "@nats-io/transport-node";
import { pino } from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Attestations } from "../../../../gateway/coordinator/attestations.ts";
import type { ClaimEpochs } from "../../../../gateway/coordinator/claim-epochs.ts";
import { serveGatewaysOnNats } from "../../../../gateway/coordinator/nats-gateways.ts";
import { Registry } from "../../../../gateway/coordinator/registry.ts";
import { claimSubject, H_EPOCH, H_FROM } from "../../../../src/wire/nats.ts";
import { Signer } from "../../../../src/crypto/signing.ts";

const PROVIDER = "a".repeat(64);

/** The little of a NATS connection the coordinator's side uses: subscriptions by subject, and what it published. */
function fakeNats() {
  const subs = new Map<string, (err: null, msg: unknown) => void>();
  const claims: number[] = [];
  const nc = {
    subscribe: (subject: string, opts: { callback: (err: null, msg: unknown) => void }) => {
      subs.set(subject, opts.callback);
      return { unsubscribe: () => subs.delete(subject) };
    },
    publish: (subject: string, _data: string, opts?: { headers?: { get(k: string): string } }) => {
      if (subject === claimSubject(PROVIDER)) claims.push(Number(opts!.headers!.get(H_EPOCH)));
    },
  };
  /** Another coordinator's claim on PROVIDER, as NATS delivers it. */
  const claimFrom = (other: string, epoch: number) => {
    const h = headers();
    h.set(H_FROM, other);
    h.set(H_EPOCH, String(epoch));
    subs.get("svc.claim.*")!(null, { subject: claimSubject(PROVIDER), headers: h });
  };
  return { nc: nc as unknown as NatsConnection, claims, claimFrom };
}

/** Epochs handed out one by one as the test says: each `next()` waits for `give` or `fail`. */
function fakeEpochs() {
  const waiting: { resolve: (n: number) => void; reject: (e: Error) => void }[] = [];
  const epochs: ClaimEpochs = { next: () => new Promise((resolve, reject) => waiting.push({ resolve, reject })) };
  const settle = async (f: (w: (typeof waiting)[number]) => void) => {
    await vi.waitFor(() => expect(waiting.length).toBeGreaterThan(0));
    f(waiting.shift()!);
    await Promise.resolve();
  };
  return { epochs, give: (n: number) => settle((w) => w.resolve(n)), fail: () => settle((w) => w.reject(new Error("database away"))) };
}

function coordinator() {
  const nats = fakeNats();
  const shared = fakeEpochs();
  const registry = new Registry(new Set(["qwen3-4b"]));
  const closed: string[] = [];
  const side = serveGatewaysOnNats(nats.nc, { registry, attestations: new Attestations(), log: pino({ level: "silent" }), epochs: shared.epochs, key: Signer.fromSeed(Buffer.alloc(32, 9)) });
  registry.add({ id: PROVIDER, trust: "process", signingKey: "1".repeat(64), sealingKey: "2".repeat(64), evidence: "3".repeat(64) }, { send: () => undefined, close: (why) => void closed.push(why) });
  registry.advertise(PROVIDER, ["qwen3-4b"]);
  registry.feed.flush();
  const held = () => registry.entries().some((e) => e.id === PROVIDER);
  return { ...nats, ...shared, side, closed, held };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("Replicas on NATS: a coordinator's claims on the providers it holds", () => {
  it("claims with the epoch the shared state gives, whatever the clock reads", async () => {
    vi.useFakeTimers({ now: new Date("1999-01-01T00:00:00Z"), toFake: ["Date"] });
    const c = coordinator();
    await c.give(41);
    expect(c.claims).toEqual([41]);
    c.side.close();
  });

  it("a greater claim from another coordinator closes ours; a smaller one is answered with ours", async () => {
    const c = coordinator();
    await c.give(10);
    c.claimFrom("c_other", 9);
    expect([c.claims, c.held()]).toEqual([[10, 10], true]);
    c.claimFrom("c_other", 11);
    expect([c.held(), c.closed]).toEqual([false, ["a newer connection to another coordinator holds this provider"]]);
    c.side.close();
  });

  it("a hold still waiting for its epoch yields to any claim, and claims nothing when the epoch comes", async () => {
    const c = coordinator();
    c.claimFrom("c_other", 1);
    expect(c.held()).toBe(false);
    await c.give(50);
    expect(c.claims).toEqual([]);
    c.side.close();
  });

  it("while the shared state is away the provider stays held and its epoch is asked for again", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout"] });
    const c = coordinator();
    await c.fail();
    expect([c.claims, c.held()]).toEqual([[], true]);
    await vi.advanceTimersByTimeAsync(1_000);
    await c.fail();
    await vi.advanceTimersByTimeAsync(2_000);
    await c.give(7);
    expect(c.claims).toEqual([7]);
    c.side.close();
  });
});
