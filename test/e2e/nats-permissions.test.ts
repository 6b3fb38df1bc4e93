// docs/operator-guide.md "Securing NATS", a NATS user per role: svc under the guide's own nats.conf (read from the
// guide, so the two cannot drift), on a real nats-server and PostgreSQL. Each role serves; a client with no user is
// refused; a gateway's user used beyond its rights reads no placement and publishes no directory; a coordinator's
// user without a trusted directory key adds no provider. What nats-server refuses is seen as its permissions violations.
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { connect, errors, headers, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startNatsServer, type NatsNode } from "../../harness/nats.ts";
import { startPostgres, type Postgres } from "../../harness/postgres.ts";
import { Signer } from "../../src/crypto/signing.ts";
import { feedSubject, H_ASK, H_FROM, H_SEQ } from "../../src/wire/nats.ts";
import { listProviders, post, waitForProvider, type AgentProcess } from "../fixtures/gateway.ts";
import { Replicas, type Replica } from "../fixtures/replicas.ts";
import { startRogueCoordinator } from "../fixtures/rogue-coordinator.ts";
import { makeTinyCatalog, type TinyCatalog } from "../fixtures/tiny-catalog.ts";

const CANARY = `canary-${randomBytes(12).toString("hex")}`;
// as the operator guide makes them: nats-server reads a variable's value as a config value, so a hex string that
// begins as a number (1e5…) stopped it at start in one run of the suite, and one of digits only would be a number
const password = () => `p${randomBytes(12).toString("hex")}`;
const PASSWORDS = { gateway: password(), coordinator: password(), replica: password() };
type Role = keyof typeof PASSWORDS;

/** The guide's nats.conf, as an operator would copy it: the fenced `conf` block under "Securing NATS", dedented. */
function guideConf(): string {
  const guide = readFileSync(join(import.meta.dirname, "../../docs/operator-guide.md"), "utf8");
  const block = /^( *)```conf\n([\s\S]*?)^\1```/m.exec(guide);
  if (!block?.[2]?.includes("authorization {")) throw new Error("docs/operator-guide.md holds no ```conf block with the authorization");
  return block[2].split("\n").map((line) => line.slice(block[1]!.length)).join("\n");
}

let tiny: TinyCatalog;
let node: NatsNode;
let postgres: Postgres;
let replicas: Replicas;
let gateway: Replica;
let replica: Replica;
let agent: AgentProcess;
const url = (role: Role) => `nats://${role}:${PASSWORDS[role]}@${node.url.slice("nats://".length)}`;
const as = (role: Role) => connect({ servers: node.url, user: role, pass: PASSWORDS[role] });

/** Every permissions violation nats-server reports to `nc`: what it refused, and on which subject. */
function violations(nc: NatsConnection): { operation: string; subject: string }[] {
  const seen: { operation: string; subject: string }[] = [];
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === "error" && status.error instanceof errors.PermissionViolationError) seen.push({ operation: status.error.operation, subject: status.error.subject });
    }
  })();
  return seen;
}

const chat = (through: Replica, body: Record<string, unknown> = {}) =>
  post(through, "/v1/chat/completions", { messages: [{ role: "user", content: CANARY }], max_tokens: 4, ...body }, { signal: AbortSignal.timeout(30_000) });

beforeAll(async () => {
  tiny = makeTinyCatalog([{ alias: "qwen3-4b", seed: 1 }]);
  const conf = join(tiny.dir, "nats.conf");
  writeFileSync(conf, guideConf());
  [node, postgres] = await Promise.all([
    startNatsServer(["-c", conf], { GATEWAY_PASSWORD: PASSWORDS.gateway, COORDINATOR_PASSWORD: PASSWORDS.coordinator, REPLICA_PASSWORD: PASSWORDS.replica }),
    startPostgres(),
  ]);
  replicas = new Replicas(tiny, url("replica"), await postgres.freshDatabase());
  const coordinator = await replicas.coordinator({ nats: url("coordinator") });
  [gateway, replica] = await Promise.all([replicas.gateway({ alone: true, nats: url("gateway") }), replicas.gateway()]);
  agent = await replicas.agent(coordinator.coordinatorUrl);
  for (const through of [gateway, replica]) await waitForProvider(through, agent.providerId);
}, 180_000);

afterAll(async () => {
  await replicas?.stop();
  await Promise.all([node?.proc.stop(), postgres?.stop()]);
  tiny?.cleanup();
});

describe("Securing NATS: a user per role, under the guide's nats.conf", () => {
  it("each role serves: a gateway alone (user gateway) and a replica (user replica) serve the provider of a coordinator alone (user coordinator)", async () => {
    for (const through of [gateway, replica]) {
      const res = await chat(through, { provider: agent.providerId });
      expect(res.status).toBe(200);
      expect(res.headers.get("x-svc-provider")).toBe(agent.providerId);
    }
  }, 60_000);

  it("a client with no user, or a wrong password, is refused at connect", async () => {
    await expect(connect({ servers: node.url, reconnect: false })).rejects.toThrow(/authorization violation/i);
    await expect(connect({ servers: node.url, user: "gateway", pass: "not-the-password", reconnect: false })).rejects.toThrow(/authorization violation/i);
  });

  it("a gateway's user used beyond its rights: it reads no placement (a sealed prompt), and neither a feed nor a snapshot it publishes reaches a gateway", async () => {
    const spy = await as("gateway");
    const refused = violations(spy);
    try {
      const placements: string[] = [];
      for (const subject of ["svc.p.>", ">"]) {
        spy.subscribe(subject, {
          callback: (err, msg) => {
            if (err === null) placements.push(msg.subject);
          },
        });
      }
      // what it may read names a gateway's subject, which it then tries to speak on as a coordinator
      const gatewaySubjects = new Set<string>();
      spy.subscribe("svc.g.*", {
        callback: (err, msg) => {
          if (err === null) gatewaySubjects.add(msg.subject);
        },
      });
      await spy.flush();
      expect((await chat(gateway, { provider: agent.providerId })).status).toBe(200);
      await vi.waitFor(() => expect(gatewaySubjects.size).toBeGreaterThan(0), { timeout: 10_000, interval: 100 });

      const forger = Signer.fromSeed(randomBytes(32));
      const made = { id: "f".repeat(64), model_ids: ["qwen3-4b"], trust: "hardware", serial: "C02FAKE0001", busy: false, waiting: 0, last_assigned: 0, signing_key: forger.publicKey, sealing_key: forger.publicKey, evidence_sha256: "e".repeat(64) };
      const h = headers();
      h.set(H_FROM, "c_forged");
      h.set(H_SEQ, "0");
      h.set(H_ASK, "snap");
      for (const subject of gatewaySubjects) spy.publish(subject, JSON.stringify({ t: "directory", reset: true, put: [made], gone: [] }), { headers: h });
      spy.publish(feedSubject("c_forged"), "", { headers: h });
      await spy.flush();
      await vi.waitFor(() => {
        expect(refused).toEqual(expect.arrayContaining([{ operation: "subscription", subject: "svc.p.>" }, { operation: "subscription", subject: ">" }]));
        expect(refused).toEqual(expect.arrayContaining([...gatewaySubjects].map((subject) => ({ operation: "publish", subject }))));
        expect(refused).toContainEqual({ operation: "publish", subject: feedSubject("c_forged") });
      }, { timeout: 10_000, interval: 100 });
      expect(placements).toEqual([]);
      for (const through of [gateway, replica]) expect((await listProviders(through)).map((r) => r.id)).toEqual([agent.providerId]);
    } finally {
      await spy.close();
    }
  }, 60_000);

  it("a coordinator's user without a trusted directory key: its made-up hardware provider is listed by no gateway and sealed nothing", async () => {
    const rogue = await startRogueCoordinator(node.url, "qwen3-4b", { user: "coordinator", pass: PASSWORDS.coordinator, key: Signer.fromSeed(randomBytes(32)) });
    try {
      await vi.waitFor(() => expect(rogue.told.size).toBeGreaterThanOrEqual(2), { timeout: 10_000, interval: 100 });
      for (const through of [gateway, replica]) {
        await through.waitForLog((l) => l.msg === "a message on NATS that no trusted coordinator signed was dropped" && String(l.why).includes("not in --coordinator-keys"));
      }
      for (const through of [gateway, replica]) {
        expect((await listProviders(through)).map((r) => r.id)).toEqual([agent.providerId]);
        expect((await chat(through, { provider: rogue.providerId })).status).toBe(503);
        expect((await chat(through)).headers.get("x-svc-provider")).toBe(agent.providerId);
      }
      expect([rogue.placements, rogue.opened]).toEqual([0, []]);
    } finally {
      await rogue.close();
    }
  }, 60_000);
});
