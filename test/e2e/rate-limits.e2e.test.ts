// docs/operator-guide.md "Rate limits" end to end, against a real `svc-gateway serve` with `--key-*` defaults and a synthetic
// agent: OpenAI's headers, 429 rate_limited with Retry-After for each limit, a concurrency slot freed on every
// way an answer ends, a user key's override set with `svc-gateway keys limit`, failed authentication slowed
// per address while valid keys pass, the 429s counted in /metrics, and a user's limits over all their keys
// (`svc-gateway users limit`) with the cap on live keys per user (`keys create`).
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqliteKeyStore } from "../../gateway/keys/sqlite-store.ts";
import { runCli } from "../../harness/cli.ts";
import { OPERATOR_KEY, get, post, startGateway, type GatewayProcess } from "../fixtures/gateway.ts";

const RPM_KEY = "sk-svc_operator-rpm-0123456789";
const TPM_KEY = "sk-svc_operator-tpm-0123456789";
const DEFAULTS = ["--key-concurrency", "1", "--key-rpm", "4", "--key-tpm", "50", "--auth-failures-per-minute", "3"];
// sign-in configured (never used) so the gateway accepts user keys from its store
const SIGN_IN = ["--oidc-issuer", "http://127.0.0.1:9", "--oidc-client-id", "svc-test", "--public-url", "http://127.0.0.1:9"];

let gw: GatewayProcess;
let userKey: string;
let userKeyId: string;

beforeAll(async () => {
  gw = await startGateway({
    args: [...DEFAULTS, ...SIGN_IN],
    // 100 ms a token: a request holds its slot for as long as its max_tokens says
    agentArgs: ["--engine", "synthetic", "--synthetic-tokens", "100", "--synthetic-token-ms", "100"],
    env: { SVC_OPERATOR_KEYS: [OPERATOR_KEY, RPM_KEY, TPM_KEY].join(",") },
  });
  const store = SqliteKeyStore.open(join(gw.tiny.dir, "gateway"));
  const { key, secret } = await store.createKey(await store.upsertUser({ issuer: "http://127.0.0.1:9", subject: "u", email: null, name: "U" }), "load");
  await store.close();
  [userKey, userKeyId] = [secret, key.id];
}, 60_000);
afterAll(() => gw.stop());

const as = (key: string) => ({ url: gw.url, key });
const chat = (key: string, extra: Record<string, unknown> = {}, init: RequestInit = {}) =>
  post(as(key), "/v1/chat/completions", { messages: [{ role: "user", content: "hi" }], max_tokens: 1, ...extra }, init);
const errorOf = async (res: Response) => ((await res.json()) as { error: Record<string, unknown> }).error;

async function rateLimited(): Promise<Record<string, number>> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const counts: Record<string, number> = {};
  for (const m of text.matchAll(/^svc_gateway_rate_limited_total\{limit="(\w+)"\} (\d+)$/gm)) counts[m[1]!] = Number(m[2]);
  return counts;
}

describe("Rate limits: per-key limits and OpenAI's headers", () => {
  it("a successful answer carries x-ratelimit-* for requests and tokens, reset written like 15s or 950ms", async () => {
    const res = await chat(OPERATOR_KEY);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-ratelimit-limit-requests")).toBe("4");
    expect(res.headers.get("x-ratelimit-remaining-requests")).toBe("3");
    expect(res.headers.get("x-ratelimit-reset-requests")).toMatch(/^(1[0-5](\.\d{1,3})?s|\d{1,3}ms)$/);
    expect(res.headers.get("x-ratelimit-limit-tokens")).toBe("50");
    expect(res.headers.get("x-ratelimit-remaining-tokens")).toBe("50");
    expect(res.headers.get("x-ratelimit-reset-tokens")).toBe("0s");
  });

  it("requests per minute: past the limit, 429 rate_limited (wait) with Retry-After and the headers at zero", async () => {
    const before = await rateLimited();
    for (let i = 0; i < 4; i++) expect((await get(as(RPM_KEY), "/v1/models")).status).toBe(200);
    const res = await get(as(RPM_KEY), "/v1/models");
    expect(res.status).toBe(429);
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(Number(res.headers.get("retry-after"))).toBeLessThanOrEqual(15);
    expect(res.headers.get("x-ratelimit-remaining-requests")).toBe("0");
    expect(await errorOf(res)).toMatchObject({ code: "rate_limited", type: "rate_limit_error", svc_action: "wait", param: null });
    // another key is not touched by this one's limit
    expect((await get(as(OPERATOR_KEY), "/v1/models")).status).toBe(200);
    expect((await rateLimited()).rpm).toBe((before.rpm ?? 0) + 1);
  });

  it("tokens per minute: the verified receipt's total is debited after the answer; then 429 until it refills", async () => {
    const before = await rateLimited();
    const first = await chat(TPM_KEY, { messages: [{ role: "user", content: "x".repeat(400) }] });
    expect(first.status).toBe(200);
    const { usage } = (await first.json()) as { usage: { total_tokens: number } };
    expect(usage.total_tokens).toBeGreaterThan(50);
    const res = await chat(TPM_KEY);
    expect(res.status).toBe(429);
    expect(res.headers.get("x-ratelimit-remaining-tokens")).toBe("0");
    // the debt is what the receipt counted beyond 50, refilled at 50 a minute: over a second and within a minute or so
    const retryAfter = Number(res.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(Math.floor(((usage.total_tokens - 50) * 60) / 50));
    expect(retryAfter).toBeLessThanOrEqual(Math.ceil(((usage.total_tokens - 50 + 1) * 60) / 50));
    expect((await errorOf(res)).message).toContain("50 tokens per minute");
    expect((await rateLimited()).tpm).toBe((before.tpm ?? 0) + 1);
  });
});

describe("Rate limits: per-key overrides (`svc-gateway keys limit`)", () => {
  it("an operator sets a user key's limits from the command line; the gateway applies them, other limits stay default", async () => {
    const dataDir = join(gw.tiny.dir, "gateway");
    const set = await runCli("svc-gateway", ["keys", "limit", userKeyId, "--rpm", "1000", "--tpm", "1000000", "--data-dir", dataDir]);
    expect(set.stderr).toBe("");
    expect(set.stdout.trim()).toBe(`${userKeyId}: concurrency=default rpm=1000 tpm=1000000`);
    const listed = await runCli("svc-gateway", ["keys", "list", "--data-dir", dataDir]);
    expect(listed.stdout).toContain(`${userKeyId}  sk-svc_`);
    const res = await chat(userKey);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-ratelimit-limit-requests")).toBe("1000");
    expect(res.headers.get("x-ratelimit-limit-tokens")).toBe("1000000");
  });

  it("a bad value is a one-line error naming the option, and changes nothing", async () => {
    const result = await runCli("svc-gateway", ["keys", "limit", userKeyId, "--rpm", "0", "--data-dir", join(gw.tiny.dir, "gateway")]);
    expect(result.code).toBe(64);
    expect(result.stderr).toBe("svc-gateway: option '--rpm <n>' argument '0' is invalid. expected a positive integer or `default`; see --help\n");
    const listed = await runCli("svc-gateway", ["keys", "list", "--data-dir", join(gw.tiny.dir, "gateway")]);
    expect(listed.stdout).toContain("concurrency=default rpm=1000 tpm=1000000");
  });
});

describe("Rate limits: a concurrency slot is freed however the answer ends", () => {
  /** Succeeds only while the user key (concurrency 1) has no request in flight. */
  const slotIsFree = async () => {
    const res = await get(as(userKey), "/v1/models");
    return res.status;
  };

  it("while a stream runs the key's next request is 429 with Retry-After: 1; a caller hanging up frees the slot", async () => {
    const before = await rateLimited();
    const controller = new AbortController();
    const res = await chat(userKey, { stream: true, max_tokens: 100 }, { signal: controller.signal });
    const id = res.headers.get("x-request-id");
    expect(res.headers.get("x-ratelimit-limit-requests")).toBe("1000"); // on the stream's head too
    await res.body!.getReader().read(); // the head and role chunk: the request holds its slot now
    const refused = await chat(userKey);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect((await errorOf(refused)).message).toContain("in flight");
    expect((await rateLimited()).concurrency).toBe((before.concurrency ?? 0) + 1);
    controller.abort();
    expect(await gw.waitForLog((l) => l.id === id)).toMatchObject({ code: "aborted" });
    expect(await slotIsFree()).toBe(200);
  });

  it("a non-stream caller hanging up mid-session frees it too", async () => {
    const sessions = () => gw.agents[0]!.stdout().match(/session \S+ start/g)?.length ?? 0;
    const started = sessions();
    const controller = new AbortController();
    const pending = chat(userKey, { max_tokens: 100 }, { signal: controller.signal });
    pending.catch(() => undefined);
    for (const deadline = Date.now() + 10_000; sessions() === started; await new Promise((r) => setTimeout(r, 20))) {
      if (Date.now() > deadline) throw new Error("the agent never started the session");
    }
    controller.abort();
    await expect(pending).rejects.toThrow();
    await gw.waitForLog((l) => l.code === "aborted" && l.status === undefined);
    expect(await slotIsFree()).toBe(200);
  });

  it("a whole answer, a finished stream, an error before the session and a stream that fails each free it", async () => {
    expect((await chat(userKey)).status).toBe(200);
    expect(await slotIsFree()).toBe(200);
    const streamed = await chat(userKey, { stream: true });
    expect(await streamed.text()).toContain("data: [DONE]");
    expect(await slotIsFree()).toBe(200);
    expect((await chat(userKey, { model: "no-such-model" })).status).toBe(404);
    expect(await slotIsFree()).toBe(200);
    // a pin to no provider fails after the stream's head: the error comes as the last data line
    const failed = await chat(userKey, { stream: true, provider: "f".repeat(64) });
    expect(await failed.text()).toContain('"code":"provider_unavailable"');
    expect(await slotIsFree()).toBe(200);
  });
});

describe("Rate limits: failed authentication per client address", () => {
  it("after N failures in a minute the address gets 429 with Retry-After instead of 401; a valid key still works", async () => {
    const before = await rateLimited();
    const bad = () => get(as("sk-svc_wrong"), "/v1/models");
    for (let i = 0; i < 3; i++) expect((await bad()).status).toBe(401);
    const slowed = await bad();
    expect(slowed.status).toBe(429);
    expect(await errorOf(slowed)).toMatchObject({ code: "rate_limited", svc_action: "wait" });
    const retryAfter = Number(slowed.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(20);
    expect((await fetch(`${gw.url}/v1/models`)).status).toBe(429); // no key at all counts as a failure too
    expect((await get(as(userKey), "/v1/models")).status).toBe(200);
    expect((await rateLimited()).auth).toBe((before.auth ?? 0) + 2);
  });
});

describe("Rate limits: `svc-gateway serve` options", () => {
  it("a bad value is a one-line error naming the flag, and the gateway does not start", async () => {
    for (const flag of ["--key-concurrency", "--key-rpm", "--key-tpm", "--user-concurrency", "--user-rpm", "--user-tpm", "--max-keys-per-user", "--auth-failures-per-minute"]) {
      const result = await runCli("svc-gateway", ["serve", "--port", "0", "--coordinator-port", "0", flag, "0"]);
      expect(result.code).toBe(64);
      expect(result.stderr).toBe(`svc-gateway: option '${flag} <n>' argument '0' is invalid. expected a positive integer; see --help\n`);
      expect(result.stdout).not.toContain("OpenAI routes at");
    }
  });
});

describe("Users, not only keys, are limited", () => {
  const dataDir = () => join(gw.tiny.dir, "gateway");
  /** A user with `n` live keys, made in the store as the settings page would. */
  async function userWithKeys(subject: string, n: number): Promise<{ userId: number; secrets: string[] }> {
    const store = SqliteKeyStore.open(dataDir());
    try {
      const userId = await store.upsertUser({ issuer: "http://127.0.0.1:9", subject, email: `${subject}@example.test`, name: null });
      return { userId, secrets: (await Promise.all(Array.from({ length: n }, (_, i) => store.createKey(userId, `k${i}`, Date.now(), 10)))).map((k) => k.secret) };
    } finally {
      await store.close();
    }
  }

  it("a user with 10 keys cannot exceed the user's limit: `users limit --rpm 3` admits 3 of 10 requests, one per key", async () => {
    const { userId, secrets } = await userWithKeys("ten", 10);
    const set = await runCli("svc-gateway", ["users", "limit", String(userId), "--rpm", "3", "--data-dir", dataDir()]);
    expect(set.stdout.trim()).toBe(`user ${userId}: concurrency=default rpm=3 tpm=default`);
    const before = await rateLimited();
    // each key is far under its own limit (4 a minute): only the user's total refuses
    const answers = await Promise.all(secrets.map((secret) => get(as(secret), "/v1/models")));
    expect(answers.map((r) => r.status).sort()).toEqual([...Array(3).fill(200), ...Array(7).fill(429)]);
    const refused = answers.find((r) => r.status === 429)!;
    expect(await errorOf(refused)).toMatchObject({
      code: "rate_limited",
      svc_action: "wait",
      message: "This key's user is over their limit of 3 requests per minute over all their API keys; retry after the Retry-After seconds.",
    });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect((await rateLimited()).user_rpm).toBe((before.user_rpm ?? 0) + 7);
    // another user's key is untouched
    expect((await get(as(userKey), "/v1/models")).status).toBe(200);
    const listed = await runCli("svc-gateway", ["users", "list", "--data-dir", dataDir()]);
    expect(listed.stdout).toContain(`${userId}  ten@example.test  keys=10  concurrency=default rpm=3 tpm=default\n`);
  });

  it("`users limit ID --tpm default` and `keys limit KEY --rpm default` give the default back: the key is served (issue 41)", async () => {
    const { userId, secrets } = await userWithKeys("back", 1);
    const keyId = (await runCli("svc-gateway", ["keys", "list", "--data-dir", dataDir()])).stdout.split("\n").find((l) => l.includes("back@example.test"))!.split(/\s+/)[0]!;
    for (const [what, id, flag] of [["users", String(userId), "--tpm"], ["keys", keyId, "--rpm"]] as const) {
      expect((await runCli("svc-gateway", [what, "limit", id, flag, "5", "--data-dir", dataDir()])).code).toBe(0);
      const back = await runCli("svc-gateway", [what, "limit", id, flag, "default", "--data-dir", dataDir()]);
      expect(back.stdout.trim()).toBe(`${what === "users" ? `user ${userId}` : keyId}: concurrency=default rpm=default tpm=default`);
    }
    // a running gateway reads overrides within 10 s; an empty string read as a limit of 0 refused every request
    await expect.poll(async () => (await get(as(secrets[0]!), "/v1/models")).status, { timeout: 30_000, interval: 500 }).toBe(200);
    const res = await get(as(secrets[0]!), "/v1/models");
    expect(res.headers.get("retry-after")).toBeNull();
  });

  it("a user's concurrency counts requests in flight on all their keys", async () => {
    const { userId, secrets } = await userWithKeys("two", 3);
    expect((await runCli("svc-gateway", ["users", "limit", String(userId), "--concurrency", "2", "--data-dir", dataDir()])).code).toBe(0);
    const sessions = () => gw.agents[0]!.stdout().match(/session \S+ start/g)?.length ?? 0;
    const started = sessions();
    const controller = new AbortController();
    // 100 ms a token: both hold their slots (one running, one queued behind it) while the third asks
    const holding = secrets.slice(0, 2).map((secret) => chat(secret, { max_tokens: 100 }, { signal: controller.signal }));
    for (const p of holding) p.catch(() => undefined);
    await expect.poll(sessions, { timeout: 10_000 }).toBeGreaterThan(started);
    const refused = await get(as(secrets[2]!), "/v1/models");
    expect(refused.status).toBe(429);
    expect((await errorOf(refused)).message).toBe(
      "This key's user already has 2 request(s) in flight over all their API keys, the user's limit; retry when one has finished.",
    );
    controller.abort();
    await expect.poll(async () => (await get(as(secrets[2]!), "/v1/models")).status, { timeout: 10_000 }).toBe(200);
  });

  it("past --max-keys-per-user, `keys create` is a one-line error naming the flag; below it, a key is made", async () => {
    const { userId } = await userWithKeys("full", 10);
    const refused = await runCli("svc-gateway", ["keys", "create", "--user", String(userId), "--max-keys-per-user", "10", "--data-dir", dataDir()]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(`svc-gateway: --user ${userId}: already holds 10 live keys, the cap (--max-keys-per-user); revoke one on the settings page first\n`);
    const made = await runCli("svc-gateway", ["keys", "create", "--user", String(userId), "--max-keys-per-user", "11", "--data-dir", dataDir()]);
    expect(made.code).toBe(0);
    expect(made.stdout).toMatch(/^sk-svc_[A-Za-z0-9_-]{43}\n$/);
    expect((await get(as(made.stdout.trim()), "/v1/models")).status).toBe(200);
  });
});
