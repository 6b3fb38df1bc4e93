// docs/api.md "Schema limits" end to end, against a real `svc-gateway serve` and a synthetic agent: every schema
// of the attack corpus (test/fixtures/schema-attacks.ts) gets its 400 over HTTP, authentication, the key's
// rate limits and the queues' caps run before any schema work, and an honest caller is served all the while.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_BODY_DEPTH, nestingPast } from "../../src/openai/json-body.ts";
import { SCHEMA_PARAM, schemaParam } from "../../src/schema/schema-fault.ts";
import { branchingChain, SCHEMA_ATTACKS, type SchemaAttack } from "../fixtures/schema-attacks.ts";
import { get, OPERATOR_KEY, post, startAgent, startGateway, waitForProvider, type AgentProcess, type GatewayProcess } from "../fixtures/gateway.ts";

const ATTACK_KEY = "sk-svc_operator-attack-0123456789";
const LIMITED_KEY = "sk-svc_operator-limited-0123456789";
const RPM = 40;

let gw: GatewayProcess;
beforeAll(async () => {
  gw = await startGateway({
    args: ["--key-rpm", String(RPM)],
    agentArgs: ["--engine", "synthetic"],
    env: { SVC_OPERATOR_KEYS: [OPERATOR_KEY, ATTACK_KEY, LIMITED_KEY].join(",") },
  });
}, 60_000);
afterAll(() => gw.stop());

const chat = (key: string, extra: Record<string, unknown>) =>
  post({ url: gw.url, key }, "/v1/chat/completions", { model: "qwen3-4b", messages: [{ role: "user", content: "hi" }], max_tokens: 4, ...extra });
const withSchema = (schema: unknown) => ({ response_format: { type: "json_schema", json_schema: { name: "attack", schema } } });
/** The attack's body as text: the deepest schemas cannot go through JSON.stringify. */
const attackBody = (attack: SchemaAttack) =>
  `{"model":"qwen3-4b","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"response_format":{"type":"json_schema","json_schema":{"name":"attack","schema":${attack.text ?? JSON.stringify(attack.schema)}}}}`;
const errorOf = async (res: Response) => ((await res.json()) as { error: { code: string; param: string | null; message: string } }).error;

describe("Schema limits: the attack corpus over HTTP", () => {
  it("each hostile schema is a 400 naming its limit and place, and an honest caller is served meanwhile", async () => {
    const honest = chat(OPERATOR_KEY, {});
    for (const attack of SCHEMA_ATTACKS) {
      const body = attackBody(attack);
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${ATTACK_KEY}`, "content-type": "application/json" },
        body,
      });
      const error = await errorOf(res);
      // a body nested past its own bound (issue 41) is refused before it is parsed, so before its schema is read
      const tooDeep = nestingPast(body, MAX_BODY_DEPTH);
      expect([res.status, error.code, error.param], attack.name).toEqual(tooDeep ? [400, "body_too_deep", null] : [400, attack.code, schemaParam(attack.pointer, SCHEMA_PARAM)]);
      expect(error.message, attack.name).toContain(tooDeep ? "body_depth" : attack.says);
    }
    expect((await honest).status).toBe(200);
    expect((await chat(OPERATOR_KEY, {})).status).toBe(200);
  });

  it("the branching $defs chain of issue 41 is refused as a tool's parameters too, with tool_choice auto or required", async () => {
    for (const tool_choice of ["auto", "required"]) {
      const tools = [{ type: "function", function: { name: "f", parameters: branchingChain(27, "anyOf") } }];
      const res = await chat(ATTACK_KEY, { tools, tool_choice });
      const error = await errorOf(res);
      expect([res.status, error.code, error.param]).toEqual([400, "schema_too_complex", "tools[0].function.parameters.$defs.l18"]);
    }
  });

  it("authentication comes before any schema work: a hostile schema without a valid key is a 401", async () => {
    const res = await chat("sk-svc_not-a-key-0123456789", withSchema(SCHEMA_ATTACKS[0]!.schema));
    expect(res.status).toBe(401);
    expect((await errorOf(res)).code).toBe("invalid_api_key");
  });

  it("the key's rate limit comes before any schema work: past its requests per minute, hostile schemas get 429", async () => {
    // the bucket holds RPM and refills RPM a minute as the requests go, so on a slow machine a few more get through
    const started = performance.now();
    const codes: string[] = [];
    while (codes.at(-1) !== "rate_limited" && codes.length <= 2 * RPM) codes.push((await errorOf(await chat(LIMITED_KEY, withSchema(SCHEMA_ATTACKS[0]!.schema)))).code);
    const refilled = Math.ceil(((performance.now() - started) / 60_000) * RPM);
    expect(codes.at(-1)).toBe("rate_limited");
    expect(codes.slice(0, -1).every((c) => c === "invalid_value")).toBe(true);
    expect(codes.length - 1).toBeGreaterThanOrEqual(RPM);
    expect(codes.length - 1).toBeLessThanOrEqual(RPM + refilled);
  });
});

describe("Schema limits: queue admission comes before any schema work", () => {
  let full: GatewayProcess;
  beforeAll(async () => {
    // one provider that never answers, and room for one request in its queue
    full = await startGateway({ args: ["--max-queue-per-provider", "1"], agentArgs: ["--engine", "synthetic", "--test-fault", "first-token-delay-ms=600000"] });
  }, 60_000);
  afterAll(() => full?.stop());

  const hostile = SCHEMA_ATTACKS.find((a) => a.code === "schema_too_complex") ?? SCHEMA_ATTACKS[0]!;
  const hostileText = hostile.text ?? JSON.stringify(hostile.schema);
  /** Each route's costly body: a hostile schema where the route takes one, a prompt past its limit where not. */
  const costly: [string, string, string][] = [
    ["/v1/chat/completions", attackBody(hostile), hostile.code],
    ["/v1/responses", `{"model":"qwen3-4b","input":"hi","text":{"format":{"type":"json_schema","name":"attack","schema":${hostileText}}}}`, hostile.code],
    ["/v1/completions", JSON.stringify({ model: "qwen3-4b", prompt: "x".repeat(300 * 1024) }), "content_too_large"],
  ];
  const postText = (path: string, body: string) =>
    fetch(`${full.url}${path}`, { method: "POST", headers: { authorization: `Bearer ${OPERATOR_KEY}`, "content-type": "application/json" }, body });

  it("with the queue full, a costly body on every route gets the queue's 503 overloaded with Retry-After, not its own 400", async () => {
    const hangUp = new AbortController();
    const held = [0, 1].map(() => post(full, "/v1/chat/completions", { messages: [{ role: "user", content: "hi" }], max_tokens: 4 }, { signal: hangUp.signal }).catch((err: unknown) => err));
    try {
      await waitForProvider(full, full.providerId, (r) => r?.busy === true && r.waiting === 1);
      for (const [path, body] of costly) {
        const res = await postText(path, body);
        const error = await errorOf(res);
        expect([path, res.status, error.code, res.headers.get("retry-after")]).toEqual([path, 503, "overloaded", "1"]);
        expect(error.message).toContain(`provider ${full.providerId} already has 1 requests waiting`);
      }
    } finally {
      hangUp.abort();
      await Promise.all(held);
    }
    // the queue drains once its callers hang up, and the same bodies meet their own 400
    await waitForProvider(full, full.providerId, (r) => r?.busy === false && r.waiting === 0);
    for (const [path, body, code] of costly) {
      const res = await postText(path, body);
      expect([path, res.status, (await errorOf(res)).code]).toEqual([path, 400, code]);
    }
  }, 60_000);
});

describe("Schema limits: an agent bounds a schema's grammar work itself (issue 41)", () => {
  // a real agent on the tiny model, and beside it one that holds schemas to a smaller budget than the gateway's (as
  // an agent would whatever a gateway let through): what the gateway passes, it refuses
  let gw: GatewayProcess;
  let strict: AgentProcess;
  beforeAll(async () => {
    gw = await startGateway();
    strict = await startAgent(gw.coordinatorUrl, gw.tiny, { args: ["--test-fault", "schema-steps=2000"] });
    await gw.waitForLog((l) => l.msg === "agent advertising" && l.provider === strict.providerId);
  }, 120_000);
  afterAll(async () => {
    await strict?.stop();
    await gw?.stop();
  });

  const format = (schema: unknown) => ({ messages: [{ role: "user", content: "hi" }], max_tokens: 8, ...withSchema(schema) });
  const faultsOf = (provider: string) => gw.logs().filter((l) => l.provider === provider && l.fault !== undefined);

  it("its refusal is the caller's 400 schema_too_complex: never re-routed to the other provider, never charged, and the agent serves on", async () => {
    // 14 levels: 82,000 leading paths, within the gateway's budget, past this agent's
    const chain = branchingChain(14);
    const refusals: string[] = [];
    // unpinned, and with a conversation of its own each (no affinity): the least recently used idle provider takes
    // each, so the strict one gets it within a few tries once the gateway lists it
    await waitForProvider(gw, strict.providerId, (r) => r?.busy === false);
    for (let i = 0; i < 4 && refusals.length === 0; i++) {
      const res = await post(gw, "/v1/chat/completions", { ...format(chain), prompt_cache_key: `try-${i}` });
      if (res.status === 200) {
        expect(res.headers.get("x-svc-provider")).toBe(gw.providerId);
        continue;
      }
      const { error } = (await res.json()) as { error: { code: string; message: string; param: string | null; svc_action: string } };
      expect([res.status, error.code, error.svc_action]).toEqual([400, "schema_too_complex", "fix_request"]);
      // the strict agent's word, in svc's message; the other provider, which serves it, was never tried
      expect(error.message).toMatch(new RegExp(`^Provider ${strict.providerId} found response_format\\.json_schema\\.schema\\S* too costly for its grammar to build or follow; simplify it\\.$`));
      refusals.push(error.code);
    }
    expect(refusals).toEqual(["schema_too_complex"]);
    // three more, pinned: three faults would rest a provider, and none is charged
    for (let i = 0; i < 3; i++) {
      const res = await post(gw, "/v1/chat/completions", { ...format(chain), provider: strict.providerId });
      expect([res.status, ((await res.json()) as { error: { code: string } }).error.code]).toEqual([400, "schema_too_complex"]);
    }
    expect(faultsOf(strict.providerId)).toEqual([]);
    const metrics = await (await get(gw, "/metrics")).text();
    expect(metrics).not.toMatch(/^svc_gateway_provider_faults_total\{[^}]*\} [1-9]/m);
    expect(metrics).not.toMatch(/^svc_gateway_provider_rests_total [1-9]/m);
    // it kept beating all along: still listed, idle, and it serves an ordinary schema at once
    await waitForProvider(gw, strict.providerId, (r) => r?.busy === false && r.waiting === 0);
    const served = await post(gw, "/v1/chat/completions", { ...format({ type: "object", properties: { a: { type: "integer" } } }), provider: strict.providerId });
    expect([served.status, served.headers.get("x-svc-provider")]).toEqual([200, strict.providerId]);
  }, 120_000);
});
