// DESIGN §7 replicas on NATS, with real processes on a real three-node nats-server cluster: a gateway alone serves
// a provider held by another replica's coordinator, and what NATS carries is the WebSocket's ciphertext only.
import { randomBytes } from "node:crypto";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { post, waitForProvider, type AgentProcess } from "../fixtures/gateway.ts";
import { startNatsCluster, type NatsCluster } from "../fixtures/nats.ts";
import { Replicas, type Replica } from "../fixtures/replicas.ts";
import { makeTinyCatalog, type TinyCatalog } from "../fixtures/tiny-catalog.ts";

const CANARY = `canary-${randomBytes(12).toString("hex")}`;
let nats: NatsCluster;
let tiny: TinyCatalog;
let replicas: Replicas;
let tap: NatsConnection;
/** Every message NATS carried while the tests ran: its subject, and its body as text. */
const carried: { subject: string; body: string }[] = [];
let replica: Replica;
let alone: Replica;
let agent: AgentProcess;

beforeAll(async () => {
  nats = await startNatsCluster();
  tiny = makeTinyCatalog([{ alias: "qwen3-4b", seed: 1 }]);
  replicas = new Replicas(tiny, nats.urls);
  tap = await connect({ servers: nats.nodes[2]!.url });
  tap.subscribe(">", { callback: (_err, msg) => void carried.push({ subject: msg.subject, body: Buffer.from(msg.data).toString("latin1") }) });
  await tap.flush();
  replica = await replicas.gateway();
  alone = await replicas.gateway({ alone: true });
  agent = await replicas.agent(replica.coordinatorUrl!);
  await waitForProvider(alone, agent.providerId);
}, 120_000);

afterAll(async () => {
  await tap?.close();
  await replicas?.stop();
  await nats?.stop();
  tiny?.cleanup();
});

describe("DESIGN §7 Replicas on NATS: sealed end to end", () => {
  it("a gateway alone serves a provider of another replica's coordinator, and no NATS message holds the canary prompt", async () => {
    const res = await post(alone, "/v1/chat/completions", {
      messages: [{ role: "system", content: `Repeat ${CANARY}.` }, { role: "user", content: CANARY }],
      max_tokens: 16,
    });
    expect(res.status).toBe(200);
    const answer = ((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content;
    // the session's `end` follows its last frame on the gateway's subject
    await expect.poll(() => carried.some((m) => m.subject.startsWith("svc.g.") && m.body.includes('"t":"end"')), { timeout: 10_000 }).toBe(true);
    const subjects = new Set(carried.map((m) => m.subject.split(".").slice(0, 2).join(".")));
    for (const s of ["svc.p", "svc.dir", "svc.g", "svc.c", "svc.hello", "svc.claim"]) expect(subjects).toContain(s);
    const bodies = carried.map((m) => m.body).join("\n");
    for (const kind of ['"t":"directory"', '"t":"place"', '"t":"frame"', '"t":"end"']) expect(bodies).toContain(kind);
    expect(bodies).not.toContain(CANARY);
    if (answer.length >= 4) expect(bodies).not.toContain(JSON.stringify(answer).slice(1, -1));
  });
});
