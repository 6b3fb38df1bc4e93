// DESIGN §8, a provider cannot exhaust or stall the gateway: real gateways and agents, the faulty ones made so
// with the agent's --test-fault (an endless answer, silence, a call to a tool not offered, error text of its
// own), each beside an honest agent that keeps serving.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FAULT_ERROR_TEXT } from "../../agent/daemon/test-faults.ts";
import { join } from "node:path";
import { get, listProviders, post, startAgent, startGateway, waitForProvider, type AgentProcess, type GatewayProcess } from "../fixtures/gateway.ts";
import { enrollProvider } from "../fixtures/enroll.ts";
import { readSse } from "../../harness/sse.ts";

const synthetic = ["--engine", "synthetic", "--synthetic-tokens", "20", "--synthetic-token-ms", "5"];
const messages = [{ role: "user", content: "hi" }];
const chat = (gw: GatewayProcess, extra: Record<string, unknown>) => post(gw, "/v1/chat/completions", { messages, max_tokens: 20, ...extra });

/** Another agent on the gateway's coordinator, made faulty with `--test-fault fault`; resolves once it advertises. */
async function faultyAgent(gw: GatewayProcess, fault: string, token?: string): Promise<AgentProcess> {
  const agent = await startAgent(gw.coordinatorUrl, gw.tiny, { args: [...synthetic, "--test-fault", fault], token });
  await gw.waitForLog((l) => l.msg === "agent advertising" && l.provider === agent.providerId);
  return agent;
}

/** The faults the gateway logged against `provider`, of `kind`. */
const faultsLogged = (gw: GatewayProcess, provider: string, kind: string) => gw.logs().filter((l) => l.provider === provider && l.fault === kind).length;

/**
 * The gateway and its honest agent that the sections on default flags share (a section whose gateway takes flags of its
 * own starts one): each section adds its faulty agents and stops them at its end, gone from the listing before the
 * next section routes an unpinned request.
 */
let gw: GatewayProcess;
beforeAll(async () => {
  gw = await startGateway({ agentArgs: synthetic });
}, 120_000);
afterAll(async () => {
  await gw?.stop();
});

/** Stops `agents` on the shared gateway and waits until its listing no longer holds them. */
async function leave(agents: (AgentProcess | undefined)[]): Promise<void> {
  const started = agents.filter((a): a is AgentProcess => a !== undefined);
  await Promise.all(started.map((a) => a.stop()));
  for (const a of started) await waitForProvider(gw, a.providerId, (r) => r === undefined);
}

/** A series of the shared gateway's /metrics (its name and labels as printed), 0 before it is first counted. */
async function metric(series: string): Promise<number> {
  const line = (await (await get(gw, "/metrics")).text()).split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

type Envelope = { error: { code: string; message: string; param: string | null; svc_action: string } };

async function expectProviderError(res: Response, provider: string): Promise<Envelope["error"]> {
  expect(res.status).toBe(502);
  const { error } = (await res.json()) as Envelope;
  expect([error.code, error.svc_action]).toEqual(["provider_error", "retry"]);
  expect(error.message).toMatch(new RegExp(`^Provider ${provider} .+, so the session was ended; retry the request\\.$`));
  return error;
}

describe("DESIGN §8 Caps on what comes back: an endless answer", () => {
  let endless: AgentProcess;
  beforeAll(async () => {
    endless = await faultyAgent(gw, "endless=8192");
  }, 120_000);
  afterAll(async () => {
    await leave([endless]);
  });

  it("ends each session with 502 provider_error (a stream: its last data line), the gateway's RSS grows < 50 MB, and another caller is served meanwhile", async () => {
    const before = gw.usage().rssMb;
    let highest = before;
    const sampler = setInterval(() => (highest = Math.max(highest, gw.usage().rssMb)), 50);
    try {
      const pinned = { provider: endless.providerId, max_tokens: 4096 };
      // eight sessions in turn on the endless provider, half of them streams, while an honest one serves another caller
      const wholes = Array.from({ length: 4 }, () => chat(gw, pinned));
      const streams = Array.from({ length: 4 }, () => chat(gw, { ...pinned, stream: true }).then((res) => readSse(res)));
      const honest = await chat(gw, { provider: gw.providerId });
      expect(honest.status).toBe(200);
      expect(honest.headers.get("x-svc-provider")).toBe(gw.providerId);
      for (const res of await Promise.all(wholes)) await expectProviderError(res, endless.providerId);
      for (const stream of await Promise.all(streams)) {
        expect(stream.data).not.toContain("[DONE]");
        const last = JSON.parse(stream.data.at(-1)!) as Envelope;
        expect([last.error.code, last.error.svc_action]).toEqual(["provider_error", "retry"]);
      }
    } finally {
      clearInterval(sampler);
    }
    expect(highest - before).toBeLessThan(50);
    // each one cancelled on the provider: it is free again
    await waitForProvider(gw, endless.providerId, (r) => r?.busy === false && r.waiting === 0);
  }, 120_000);

  it("a streaming caller who stops reading makes the gateway hold no more than the session's bound: the session ends and the provider is freed", async () => {
    const before = gw.usage().rssMb;
    const faults = faultsLogged(gw, endless.providerId, "answer_bounds");
    const res = await chat(gw, { provider: endless.providerId, max_tokens: 4096, stream: true });
    expect(res.status).toBe(200);
    try {
      // the body is never read: the socket's buffers fill, and the gateway must not buffer the rest
      await expect.poll(() => faultsLogged(gw, endless.providerId, "answer_bounds"), { timeout: 30_000 }).toBeGreaterThan(faults);
      await waitForProvider(gw, endless.providerId, (r) => r?.busy === false && r.waiting === 0);
      expect(gw.usage().rssMb - before).toBeLessThan(50);
    } finally {
      await res.body?.cancel();
    }
  }, 60_000);
});

describe("DESIGN §8 Deadlines: a silent provider", () => {
  let gw: GatewayProcess;
  let silent: AgentProcess;
  let stalling: AgentProcess;
  beforeAll(async () => {
    gw = await startGateway({ agentArgs: synthetic, args: ["--first-token-timeout-ms", "1500", "--idle-timeout-ms", "1500"] });
    [silent, stalling] = await Promise.all([faultyAgent(gw, "first-token-delay-ms=600000"), faultyAgent(gw, "token-delay-ms=600000")]);
  }, 120_000);
  afterAll(async () => {
    await Promise.all([silent?.stop(), stalling?.stop()]);
    await gw?.stop();
  });

  it("pinned: 502 provider_error once the first-token deadline passes, and the slot is freed", async () => {
    const started = performance.now();
    const res = await chat(gw, { provider: silent.providerId });
    const error = await expectProviderError(res, silent.providerId);
    expect(error.message).toContain("sent no token within 1.5 s of starting the session");
    expect(performance.now() - started).toBeGreaterThanOrEqual(1500);
    await waitForProvider(gw, silent.providerId, (r) => r?.busy === false && r.waiting === 0);
    await gw.waitForLog((l) => l.fault === "deadline" && l.provider === silent.providerId);
  }, 60_000);

  it("mid-stream: a gap past the idle deadline ends the stream with the error line, no [DONE], and frees the provider", async () => {
    const stream = await readSse(await chat(gw, { provider: stalling.providerId, stream: true }));
    expect(stream.data).not.toContain("[DONE]");
    expect(stream.data.some((d) => d.includes('"content":"lorem"'))).toBe(true);
    const last = (JSON.parse(stream.data.at(-1)!) as Envelope).error;
    expect([last.code, last.svc_action]).toEqual(["provider_error", "retry"]);
    expect(last.message).toContain("sent nothing for 1.5 s mid-session");
    await waitForProvider(gw, stalling.providerId, (r) => r?.busy === false && r.waiting === 0);
  }, 60_000);

  it("unpinned: re-routed before the first token to the honest provider, so both of two callers get 200", async () => {
    const faults = faultsLogged(gw, silent.providerId, "deadline");
    // two at once: idle-first routing gives one of them to each provider
    const answers = await Promise.all([chat(gw, {}), chat(gw, {})]);
    expect(answers.map((r) => r.status)).toEqual([200, 200]);
    expect(answers.map((r) => r.headers.get("x-svc-provider"))).toEqual([gw.providerId, gw.providerId]);
    expect(faultsLogged(gw, silent.providerId, "deadline")).toBe(faults + 1);
  }, 60_000);
});

describe("Issue 41 item 6: a provider's validation errors are checked before any caller hears them", () => {
  /** Says invalid_value with a URL of its own in param (and its own text in the message), to every request. */
  let rogue: AgentProcess;
  /** Says invalid_value naming a field the request has, to every request: plausible, and false. */
  let claimer: AgentProcess;
  const URL_PARAM = "messages.https://evil.example/login-now";
  beforeAll(async () => {
    [rogue, claimer] = await Promise.all([faultyAgent(gw, `error=invalid_value,error-param=${URL_PARAM}`), faultyAgent(gw, "error=invalid_value")]);
  }, 180_000);
  afterAll(async () => {
    await leave([rogue, claimer]);
  });

  it("a param that names nothing the request holds is the provider's own fault: 502 with svc's message, its text nowhere", async () => {
    const provider = rogue.providerId;
    const before = faultsLogged(gw, provider, "error");
    const res = await chat(gw, { provider });
    const text = await res.clone().text();
    const error = await expectProviderError(res, provider);
    expect(error).toMatchObject({ message: `Provider ${provider} reported an error naming no field of the request, so the session was ended; retry the request.`, param: null });
    for (const written of ["evil.example", FAULT_ERROR_TEXT]) expect(text).not.toContain(written);
    // the gateway's log line may come a moment after the answer
    await expect.poll(() => faultsLogged(gw, provider, "error")).toBe(before + 1);
  }, 60_000);

  it("unpinned, a claimed invalid_value moves to another provider; once another serves it, the claim is charged", async () => {
    const sessions = (agent: AgentProcess) => agent.stdout().split("\n").filter((line) => / start \(/.test(line)).length;
    const before = faultsLogged(gw, claimer.providerId, "error");
    // four at a time: idle-first routing hands some to each provider first
    const answers = await Promise.all(Array.from({ length: 4 }, () => chat(gw, {})));
    for (const res of answers) {
      expect(res.status).toBe(200);
      expect(res.headers.get("x-svc-provider")).toBe(gw.providerId);
      expect(await res.text()).not.toContain("evil.example");
    }
    expect(sessions(claimer) + sessions(rogue)).toBeGreaterThan(0);
    await expect.poll(() => gw.logs().some((l) => l.provider === claimer.providerId && l.fault === "error" && /another provider served it/.test(String(l.why)))).toBe(true);
    expect(faultsLogged(gw, claimer.providerId, "error")).toBeGreaterThan(before);
  }, 60_000);

  it("pinned, the claim cannot be checked: the caller gets it as a 400 with svc's message", async () => {
    const res = await chat(gw, { provider: claimer.providerId });
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as Envelope;
    expect(error).toMatchObject({ code: "invalid_value", param: "messages", message: `Provider ${claimer.providerId} found a value this model cannot take in messages; change it.` });
  }, 60_000);
});

describe("DESIGN §8 Tool calls and error text a provider writes", () => {
  const agents: Record<string, AgentProcess> = {};
  const tools = [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: {} } } }];
  beforeAll(async () => {
    const faults = { tool: "tool-call=rm_rf", madeUp: "error=invalid_api_key", validation: "error=invalid_value" };
    await Promise.all(Object.entries(faults).map(async ([name, fault]) => (agents[name] = await faultyAgent(gw, fault))));
  }, 180_000);
  afterAll(async () => {
    await leave(Object.values(agents));
  });

  it("a call to a tool the caller did not offer never reaches the caller: 502 provider_error, whole or streamed", async () => {
    const provider = agents.tool!.providerId;
    const whole = await chat(gw, { provider, tools });
    const text = JSON.stringify(await expectProviderError(whole, provider));
    expect(text).not.toContain("rm_rf");
    const stream = await readSse(await chat(gw, { provider, tools, stream: true }));
    expect(stream.raw).not.toContain("rm_rf");
    expect((JSON.parse(stream.data.at(-1)!) as Envelope).error.code).toBe("provider_error");
  }, 60_000);

  it("a forced tool_choice broken by the provider is its fault too", async () => {
    const provider = agents.tool!.providerId;
    const offered = [...tools, { type: "function", function: { name: "rm_rf" } }];
    const res = await chat(gw, { provider, tools: offered, tool_choice: { type: "function", function: { name: "get_weather" } } });
    await expectProviderError(res, provider);
  }, 60_000);

  it("an error code outside the validation set is 502 provider_error with svc's own message, never the provider's text", async () => {
    const provider = agents.madeUp!.providerId;
    const error = await expectProviderError(await chat(gw, { provider }), provider);
    expect(error.message).toBe(`Provider ${provider} reported an error of its own, so the session was ended; retry the request.`);
    expect(error.param).toBeNull();
  }, 60_000);

  it("a validation code passes as the caller's 400, with svc's own message", async () => {
    const provider = agents.validation!.providerId;
    const res = await chat(gw, { provider });
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as Envelope;
    expect(error).toEqual({
      code: "invalid_value",
      message: `Provider ${provider} found a value this model cannot take in messages; change it.`,
      param: "messages",
      type: "invalid_request_error",
      svc_action: "fix_request",
    });
    expect(error.message).not.toContain(FAULT_ERROR_TEXT);
  }, 60_000);

  it("after repeated faults a provider rests out of rotation, with a log line and a metric; unpinned requests go elsewhere", async () => {
    const provider = agents.madeUp!.providerId;
    // the shared gateway has counted the sections before this one: the metrics must rise by this test's own
    const [rests, errors] = ["svc_gateway_provider_rests_total", 'svc_gateway_provider_faults_total{kind="error"}'];
    const before = { rests: await metric(rests), errors: await metric(errors) };
    for (let i = 0; i < 3; i++) await expectProviderError(await chat(gw, { provider }), provider);
    await gw.waitForLog((l) => l.provider === provider && typeof l.msg === "string" && /rests out of rotation for 60 s after \d+ faults/.test(l.msg));
    expect(await metric(rests)).toBeGreaterThanOrEqual(before.rests + 1);
    expect(await metric(errors)).toBeGreaterThanOrEqual(before.errors + 3);
    // unpinned requests skip it (they go to the honest agent, or the one that reports invalid_value)
    const sessions = () => agents.madeUp!.stdout().split("\n").filter((line) => / start \(/.test(line)).length;
    const placed = sessions();
    const answers = await Promise.all(Array.from({ length: 4 }, () => chat(gw, {})));
    for (const res of answers) expect([200, 400]).toContain(res.status);
    expect(sessions()).toBe(placed);
  }, 60_000);
});

describe("DESIGN §8 Re-routing before the first token: at most twice", () => {
  let gw: GatewayProcess;
  let faulty: AgentProcess[] = [];
  beforeAll(async () => {
    // no honest agent: four that each answer with an error of their own before any token; one fault rests a provider
    gw = await startGateway({ agents: 0, args: ["--fault-threshold", "1", "--fault-window-ms", "5000", "--fault-rest-ms", "600000"] });
    faulty = await Promise.all(Array.from({ length: 4 }, () => faultyAgent(gw, "error=invalid_api_key")));
  }, 180_000);
  afterAll(async () => {
    await Promise.all(faulty.map((a) => a.stop()));
    await gw?.stop();
  });

  it("an unpinned request tries three providers (two re-routes), each charged once, then gets the last one's 502; the fourth is never tried", async () => {
    const res = await chat(gw, {});
    const requestId = res.headers.get("x-request-id");
    // the request's own log line comes after every fault it charged
    await gw.waitForLog((l) => l.msg === "request" && l.id === requestId);
    const charged = faulty.map((a) => faultsLogged(gw, a.providerId, "error"));
    expect(charged.filter((n) => n === 1)).toHaveLength(3);
    expect(charged.filter((n) => n === 0)).toHaveLength(1);
    // the caller's answer is the fault of the third provider tried
    const tried = gw.logs().filter((l) => l.request_id === requestId && l.fault === "error").map((l) => l.provider as string);
    expect(tried).toHaveLength(3);
    await expectProviderError(res, tried[2]!);
    // the fault policy's flags: each provider tried rests after its one fault, for 600 s
    for (const provider of tried) await gw.waitForLog((l) => l.provider === provider && l.msg === `provider ${provider} rests out of rotation for 600 s after 1 faults`);
    const untried = faulty[charged.indexOf(0)]!;
    expect(untried.stdout().split("\n").filter((line) => / start \(/.test(line))).toHaveLength(0);
  }, 60_000);
});

describe("Issue 41: faults follow the enrollment, not the key", () => {
  it("a rested provider that comes back with fresh keys on the same token is still resting: unpinned requests go elsewhere", async () => {
    const token = await enrollProvider(join(gw.tiny.dir, "gateway"));
    const faulty = await faultyAgent(gw, "endless=8192", token);
    let enrollment: unknown;
    try {
      for (let i = 0; i < 3; i++) await expectProviderError(await chat(gw, { provider: faulty.providerId }), faulty.providerId);
      const rest = await gw.waitForLog((l) => l.provider === faulty.providerId && typeof l.msg === "string" && /rests out of rotation/.test(l.msg));
      enrollment = rest.enrollment;
      expect(enrollment).toMatch(/^ptk_/);
    } finally {
      await faulty.stop();
    }
    // the same machine makes new keys (a fresh data dir) and presents the same token: an honest agent now
    const rekeyed = await startAgent(gw.coordinatorUrl, gw.tiny, { args: synthetic, token });
    try {
      expect(rekeyed.providerId).not.toBe(faulty.providerId);
      await gw.waitForLog((l) => l.msg === "agent granted" && l.provider === rekeyed.providerId && l.enrollment === enrollment);
      await gw.waitForLog((l) => l.msg === "agent advertising" && l.provider === rekeyed.providerId);
      // the gateway knows the enrollment; callers are not shown it
      expect((await listProviders(gw)).find((r) => r.id === rekeyed.providerId)).not.toHaveProperty("enrollment");
      // idle and least recently used, routing would give it every other one of these (no prompt cache, so no affinity
      // to the honest one): resting, it gets none
      for (let i = 0; i < 4; i++) {
        const res = await chat(gw, { cache_prompt: false });
        expect(res.status).toBe(200);
        expect(res.headers.get("x-svc-provider")).toBe(gw.providerId);
      }
      // a pin still reaches it, as it reaches any resting provider
      const pinned = await chat(gw, { provider: rekeyed.providerId });
      expect(pinned.headers.get("x-svc-provider")).toBe(rekeyed.providerId);
    } finally {
      await rekeyed.stop();
    }
  }, 120_000);
});
