// DESIGN §11 on NATS: a coordinator signs what it publishes to gateways, and a gateway takes it only under a trusted
// key, for that subject and sender, once. A unit on a fake NATS connection: the coordinator's side (nats-gateways.ts)
// publishes its feed and a snapshot as it does on a real cluster, and the gateway's check (nats-signatures.ts) reads
// them as they arrive, and as a stranger would forge, move or replay them.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { headers, type MsgHdrs, type NatsConnection } from "@nats-io/transport-node";
import { pino } from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { Attestations } from "../../../../gateway/coordinator/attestations.ts";
import { serveGatewaysOnNats } from "../../../../gateway/coordinator/nats-gateways.ts";
import { Registry } from "../../../../gateway/coordinator/registry.ts";
import { CoordinatorKeys, RELOAD_MS } from "../../../../gateway/fabric/coordinator-keys.ts";
import { CoordinatorSignatures } from "../../../../gateway/fabric/nats-signatures.ts";
import { Signer } from "../../../../src/crypto/signing.ts";
import { feedSubject, gatewaySubject, H_ASK, H_FROM, H_KEY, H_N, H_SEQ, H_SIG, HELLO_SUBJECT } from "../../../../src/wire/nats.ts";

interface Published {
  subject: string;
  data: Uint8Array;
  headers: MsgHdrs;
}

/** One coordinator on a fake connection: what it published, and a gateway's hello to make it send a snapshot. */
function coordinator(key = Signer.fromSeed(randomBytes(32))) {
  const published: Published[] = [];
  const subs = new Map<string, (err: null, msg: unknown) => void>();
  const nc = {
    subscribe: (subject: string, opts: { callback: (err: null, msg: unknown) => void }) => {
      subs.set(subject, opts.callback);
      return { unsubscribe: () => subs.delete(subject) };
    },
    publish: (subject: string, data: Uint8Array, opts: { headers: MsgHdrs }) => void published.push({ subject, data, headers: opts.headers }),
  };
  const registry = new Registry(new Set(["qwen3-4b"]));
  const side = serveGatewaysOnNats(nc as unknown as NatsConnection, { registry, attestations: new Attestations(), log: pino({ level: "silent" }), epochs: { next: () => new Promise(() => undefined) }, key });
  const hello = (g: string) => {
    const h = headers();
    h.set(H_FROM, g);
    subs.get(HELLO_SUBJECT)!(null, { subject: HELLO_SUBJECT, headers: h });
  };
  return { key, side, published, hello };
}

/** A copy of a message's headers with some changed (undefined: left out). */
function edited(h: MsgHdrs, changes: Record<string, string | undefined>): MsgHdrs {
  const copy = headers();
  for (const [k, v] of h) if (!(k in changes)) copy.set(k, v[0]!);
  for (const [k, v] of Object.entries(changes)) if (v !== undefined) copy.set(k, v);
  return copy;
}

const dir = mkdtempSync(join(tmpdir(), "svc-coordinator-keys-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("DESIGN §11 Replicas on NATS: a gateway takes a coordinator's message only under its signature", () => {
  it("a trusted coordinator's feed beat and snapshot are taken, with the sender, the feed's number and the ask they were signed with", () => {
    const c = coordinator();
    c.hello("g_one");
    const check = new CoordinatorSignatures((key) => key === c.key.publicKey);
    const [beat, snapshot] = [c.published.find((m) => m.subject === feedSubject(c.side.id))!, c.published.find((m) => m.subject === gatewaySubject("g_one"))!];
    expect(check.check(beat.subject, beat.headers, beat.data)).toEqual({ ok: true, from: c.side.id, seq: "0" });
    expect(check.check(snapshot.subject, snapshot.headers, snapshot.data)).toEqual({ ok: true, from: c.side.id, seq: "0", ask: "snap" });
  });

  it("unsigned, or signed by a key the gateway was not given: dropped", () => {
    const c = coordinator();
    c.hello("g_one");
    const snapshot = c.published.find((m) => m.subject === gatewaySubject("g_one"))!;
    const unsigned = edited(snapshot.headers, { [H_KEY]: undefined, [H_SIG]: undefined, [H_N]: undefined });
    expect(new CoordinatorSignatures(() => true).check(snapshot.subject, unsigned, snapshot.data)).toEqual({ ok: false, why: "unsigned" });
    const stranger = coordinator();
    stranger.hello("g_one");
    const theirs = stranger.published.find((m) => m.subject === gatewaySubject("g_one"))!;
    expect(new CoordinatorSignatures((key) => key === c.key.publicKey).check(theirs.subject, theirs.headers, theirs.data)).toMatchObject({ ok: false, why: expect.stringContaining("not in --coordinator-keys") });
  });

  it.each([
    ["a body changed", (m: Published) => ({ ...m, data: new TextEncoder().encode('{"t":"directory","reset":true,"put":[],"gone":[]}') })],
    ["moved to another gateway's subject", (m: Published) => ({ ...m, subject: gatewaySubject("g_two") })],
    ["another feed number", (m: Published) => ({ ...m, headers: edited(m.headers, { [H_SEQ]: "7" }) })],
    ["no longer answering the gateway's ask", (m: Published) => ({ ...m, headers: edited(m.headers, { [H_ASK]: undefined }) })],
    ["claimed by another coordinator id", (m: Published) => ({ ...m, headers: edited(m.headers, { [H_FROM]: "c_other" }) })],
    ["another number", (m: Published) => ({ ...m, headers: edited(m.headers, { [H_N]: "99" }) })],
  ])("a trusted coordinator's snapshot with %s: its signature no longer verifies", (_what, forge) => {
    const c = coordinator();
    c.hello("g_one");
    const forged = forge(c.published.find((m) => m.subject === gatewaySubject("g_one"))!);
    expect(new CoordinatorSignatures((key) => key === c.key.publicKey).check(forged.subject, forged.headers, forged.data)).toEqual({ ok: false, why: "a signature that does not verify" });
  });

  it("a replay is dropped: the same message again, or an older one after a newer, on the same subject", () => {
    const c = coordinator();
    c.hello("g_one");
    c.hello("g_one");
    const check = new CoordinatorSignatures((key) => key === c.key.publicKey);
    const [first, second] = c.published.filter((m) => m.subject === gatewaySubject("g_one"));
    expect(check.check(first!.subject, first!.headers, first!.data).ok).toBe(true);
    expect(check.check(first!.subject, first!.headers, first!.data)).toMatchObject({ ok: false, why: expect.stringContaining("a replay") });
    expect(check.check(second!.subject, second!.headers, second!.data).ok).toBe(true);
    expect(check.check(first!.subject, first!.headers, first!.data)).toMatchObject({ ok: false, why: expect.stringContaining("a replay") });
    // another subject keeps its own count: the coordinator's feed is taken still
    const beat = c.published.find((m) => m.subject === feedSubject(c.side.id))!;
    expect(check.check(beat.subject, beat.headers, beat.data).ok).toBe(true);
  });
});

describe("DESIGN §11 --coordinator-keys: the coordinators a gateway trusts", () => {
  it("reads the file at start, trusts its own coordinator besides, and takes a key added later without a restart (at most one look a second)", () => {
    const [a, b, own] = [Signer.fromSeed(randomBytes(32)), Signer.fromSeed(randomBytes(32)), Signer.fromSeed(randomBytes(32))];
    const path = join(dir, "coordinator-keys");
    writeFileSync(path, `# coordinator a\n${a.publicKey}\n`);
    let now = 10_000;
    const keys = new CoordinatorKeys(path, [own.publicKey], () => now);
    expect([keys.has(a.publicKey), keys.has(own.publicKey), keys.has(b.publicKey)]).toEqual([true, true, false]);
    writeFileSync(path, `${a.publicKey}\n${b.publicKey}\n`);
    utimesSync(path, new Date(), new Date(Date.now() + 5_000));
    // looked a moment ago: not again yet
    expect(keys.has(b.publicKey)).toBe(false);
    now += RELOAD_MS;
    expect(keys.has(b.publicKey)).toBe(true);
    expect(keys.size).toBe(3);
  });

  it("a file that cannot be read, or a line that is not a key, is an error naming the flag", () => {
    expect(() => new CoordinatorKeys(join(dir, "missing"))).toThrow(`--coordinator-keys ${join(dir, "missing")}: cannot read it (ENOENT)`);
    const bad = join(dir, "bad-keys");
    writeFileSync(bad, "not-a-key\n");
    expect(() => new CoordinatorKeys(bad)).toThrow(`--coordinator-keys ${bad}: ${bad}:1: expected a 64-hex-character Ed25519 public key`);
  });
});
