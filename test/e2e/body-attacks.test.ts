// Issue 41 items 2 and 3, against a real `svc-gateway serve` and a synthetic agent: a body nested millions deep in a
// field nobody reads is refused before it is parsed, a big flat body is parsed off the event loop, and neither slows
// another caller's GET /v1/models; one key's flood of budget-exhausting schemas takes only its own share of the
// parse pool, so another caller's small json_schema request is still served.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_BODY_DEPTH } from "../../src/openai/json-body.ts";
import { SCHEMA_ATTACKS } from "../fixtures/schema-attacks.ts";
import { get, OPERATOR_KEY, startGateway, type GatewayProcess } from "../fixtures/gateway.ts";

const ATTACK_KEY = "sk-svc_operator-attack-0123456789";
const OTHER_KEY = "sk-svc_operator-other-0123456789";

let gw: GatewayProcess;
beforeAll(async () => {
  gw = await startGateway({ agentArgs: ["--engine", "synthetic"], env: { SVC_OPERATOR_KEYS: [OPERATOR_KEY, ATTACK_KEY, OTHER_KEY].join(",") } });
}, 60_000);
afterAll(() => gw.stop());

const CHAT = '{"model":"qwen3-4b","messages":[{"role":"user","content":"hi"}],"max_tokens":4';
/** A chat body of about 4 MB whose `padding` field, which nothing reads, holds `inner`. */
const padded = (inner: string) => `${CHAT},"padding":${inner}}`;
const NESTED = padded("[".repeat(2_000_000) + "]".repeat(2_000_000));
const FLAT = padded(`[${"0,".repeat(1_900_000)}0]`);

const send = (key: string, body: string, path = "/v1/chat/completions") =>
  fetch(`${gw.url}${path}`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body });
const errorOf = async (res: Response) => ((await res.json()) as { error: { code: string; message: string } }).error;

/** Another caller's GET /v1/models, one after another, while `attack` runs: each latency in ms. */
async function modelsWhile(attack: Promise<unknown>): Promise<number[]> {
  const times: number[] = [];
  let attacking = true;
  void attack.finally(() => (attacking = false));
  while (attacking || times.length < 20) {
    const started = performance.now();
    const res = await get({ url: gw.url, key: OTHER_KEY }, "/v1/models");
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    times.push(performance.now() - started);
  }
  return times;
}
const p99 = (times: number[]) => [...times].sort((a, b) => a - b)[Math.ceil(times.length * 0.99) - 1]!;

describe("Issue 41 item 2: a body's nesting is bounded, and big bodies are parsed off the event loop", () => {
  it(`2 million nested [ in an ignored field is 400 body_too_deep naming the limit of ${MAX_BODY_DEPTH}`, async () => {
    expect(NESTED.length).toBeGreaterThan(4_000_000 - 100);
    const res = await send(ATTACK_KEY, NESTED);
    const error = await errorOf(res);
    expect([res.status, error.code]).toEqual([400, "body_too_deep"]);
    expect(error.message).toContain(`at most ${MAX_BODY_DEPTH} levels are allowed (limit body_depth)`);
  });

  it("a 4 MB flat body in an ignored field is answered", async () => {
    const res = await send(ATTACK_KEY, FLAT);
    expect(res.status).toBe(200);
    expect((await res.json()) as { object: string }).toMatchObject({ object: "chat.completion" });
  });

  it("one key sending them two at a time, nested and flat, leaves another caller's GET /v1/models quick", async () => {
    const codes: number[] = [];
    const attack = Promise.all(
      [0, 1].map(async (lane) => {
        for (let i = 0; i < 8; i++) codes.push((await send(ATTACK_KEY, (i + lane) % 2 === 0 ? NESTED : FLAT).then(async (r) => (await r.arrayBuffer(), r.status))));
      }),
    );
    const times = await modelsWhile(attack);
    expect(codes.sort()).toEqual([...Array(8).fill(200), ...Array(8).fill(400)]);
    // before the bound, each nested body held the event loop for seconds (a 3.7 s median); the 100 ms target is
    // npm run bench's to measure (its attack section), not a test's on a shared machine
    expect(p99(times)).toBeLessThan(1_000);
  }, 120_000);
});

describe("Issue 41 item 3: each key has its own share of the schema parse pool", () => {
  it("one key's 100 concurrent budget-exhausting schemas: its share is parsed, the rest 429, and another key's small json_schema requests are all served", async () => {
    const hostile = SCHEMA_ATTACKS.find((a) => a.code === "schema_too_complex")!;
    const attackBody = `${CHAT},"response_format":{"type":"json_schema","json_schema":{"name":"attack","schema":${JSON.stringify(hostile.schema)}}}}`;
    const small = JSON.stringify({
      model: "qwen3-4b",
      messages: [{ role: "user", content: "hi" }],
      max_tokens: 4,
      response_format: { type: "json_schema", json_schema: { name: "city", schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } },
    });
    const flood = Array.from({ length: 100 }, () => send(ATTACK_KEY, attackBody).then(async (r) => `${r.status} ${(await errorOf(r)).code}`));
    const honest: number[] = [];
    for (let i = 0; i < 10; i++) honest.push((await send(OTHER_KEY, small).then(async (r) => (await r.arrayBuffer(), r.status))));
    const answers = await Promise.all(flood);
    expect(honest).toEqual(Array(10).fill(200));
    const counts = answers.reduce<Record<string, number>>((all, a) => ({ ...all, [a]: (all[a] ?? 0) + 1 }), {});
    expect(Object.keys(counts).sort()).toEqual(["400 schema_too_complex", "429 rate_limited"]);
    expect(counts["400 schema_too_complex"]).toBeGreaterThanOrEqual(16);
  }, 120_000);
});
