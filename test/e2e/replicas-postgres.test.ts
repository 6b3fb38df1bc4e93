// docs/operator-guide.md "Running more than one gateway", the PostgreSQL half: two gateway processes on one real
// PostgreSQL (`serve --database`). A key made anywhere works on both at once; one revoked on either, or with
// `svc-gateway keys revoke`, is refused by both within a second; PostgreSQL restarted under them leaves cached keys
// working, answers what needs the database with 503 key_store_unavailable (wait), and recovers by itself. A key's
// requests per minute hold across both gateways (slices leased from the database). And the operator's `keys create/revoke/migrate` against --database, and a wrong or unreachable --database at start.
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../harness/cli.ts";
import { GATEWAY_BIN, startProcess } from "../../harness/process.ts";
import { browserSession } from "../fixtures/browser.ts";
import { OPERATOR_KEY } from "../fixtures/gateway.ts";
import { startPostgres, type Postgres } from "../../harness/postgres.ts";
import { startSettingsGateway, type SettingsGateway } from "../fixtures/settings-gateway.ts";
import { openKeyStore } from "../../gateway/keys/open-store.ts";
import { PostgresKeyStore } from "../../gateway/keys/postgres-store.ts";
import { secretHash } from "../../gateway/keys/secret.ts";
import { makeTinyCatalog } from "../fixtures/tiny-catalog.ts";

let postgres: Postgres;
let database: string;
let a: SettingsGateway;
let b: SettingsGateway;
let erin: { cookie: string; csrf: string };
const KEY_RPM = 60;

beforeAll(async () => {
  postgres = await startPostgres();
  database = await postgres.freshDatabase();
  // started together: both run the migrations at once, under the advisory lock
  // every key at 60 requests a minute, shared by both gateways through the database
  const args = ["--database", database, "--key-rpm", String(KEY_RPM)];
  [a, b] = await Promise.all([startSettingsGateway({ args }), startSettingsGateway({ args })]);
  erin = await browserSession(a.url, "erin");
}, 180_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await postgres?.stop();
});

const status = async (gateway: SettingsGateway, key: string) =>
  (await fetch(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).status;

/** `svc-gateway keys create --json` for erin, against the shared database. */
async function createKey(name: string): Promise<{ id: string; secret: string }> {
  const made = await runCli("svc-gateway", ["keys", "create", "--user", "erin@example.test", "--name", name, "--json", "--database", database]);
  expect([made.code, made.stderr]).toEqual([0, ""]);
  const parsed = JSON.parse(made.stdout) as { id: string; secret: string; name: string; prefix: string; user_id: number };
  expect(parsed).toMatchObject({ id: expect.stringMatching(/^key_[0-9a-f]{24}$/), name, secret: expect.stringMatching(/^sk-svc_/), user_id: expect.any(Number) });
  expect(parsed.prefix).toBe(`${parsed.secret.slice(0, 11)}…`);
  return parsed;
}

describe("Running more than one gateway: keys on PostgreSQL", () => {
  it("a key made with `keys create` works on both gateways at once, and shows on its owner's settings page", async () => {
    const key = await createKey("ci");
    expect([await status(a, key.secret), await status(b, key.secret)]).toEqual([200, 200]);
    const page = await (await fetch(`${a.url}/settings`, { headers: { cookie: erin.cookie } })).text();
    expect(page).toContain("<td>ci</td>");
  });

  it("a key revoked on one gateway's settings page is refused by the other within 1 s", async () => {
    const key = await createKey("revoked-on-a");
    expect([await status(a, key.secret), await status(b, key.secret)]).toEqual([200, 200]); // cached on both now
    const revoked = await fetch(`${a.url}/settings/keys/${key.id}/revoke`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: erin.cookie, origin: a.url },
      body: new URLSearchParams({ csrf: erin.csrf }).toString(),
    });
    expect(revoked.status).toBe(303);
    expect(await status(a, key.secret)).toBe(401);
    await expect.poll(() => status(b, key.secret), { timeout: 1_000, interval: 50 }).toBe(401);
  });

  it("`keys revoke ID` is refused by both gateways within 1 s; an unknown id is one line and exit 1", async () => {
    const key = await createKey("revoked-by-cli");
    expect([await status(a, key.secret), await status(b, key.secret)]).toEqual([200, 200]);
    const done = await runCli("svc-gateway", ["keys", "revoke", key.id, "--json", "--database", database]);
    expect([done.code, done.stdout, done.stderr]).toEqual([0, `${JSON.stringify({ id: key.id, revoked: true })}\n`, ""]);
    for (const gateway of [a, b]) await expect.poll(() => status(gateway, key.secret), { timeout: 1_000, interval: 50 }).toBe(401);
    const again = await runCli("svc-gateway", ["keys", "revoke", key.id, "--database", database]);
    expect([again.code, again.stderr]).toEqual([1, `svc-gateway: keys revoke ${key.id}: no live key has that id (see keys list)\n`]);
  });

  it("PostgreSQL restarted: cached keys keep working, what needs the database is 503 wait, and all recovers by itself", async () => {
    const [cached, fresh] = await Promise.all([createKey("cached"), createKey("not-yet-used")]);
    expect(await status(a, cached.secret)).toBe(200);
    await postgres.stopServer();
    try {
      expect(await status(a, cached.secret)).toBe(200);
      const refused = await fetch(`${a.url}/v1/models`, { headers: { authorization: `Bearer ${fresh.secret}` } });
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toBe("2");
      expect(((await refused.json()) as { error: unknown }).error).toMatchObject({ code: "key_store_unavailable", type: "api_error", svc_action: "wait", param: null });
      // a signed-in page needs its session from the database too
      expect((await fetch(`${a.url}/settings`, { headers: { cookie: erin.cookie } })).status).toBe(503);
      expect(await status(b, OPERATOR_KEY)).toBe(200);
    } finally {
      await postgres.startServer();
    }
    await expect.poll(() => status(a, fresh.secret), { timeout: 10_000, interval: 200 }).toBe(200);
    expect((await fetch(`${b.url}/settings`, { headers: { cookie: erin.cookie } })).status).toBe(200);
    // each gateway listens again: a revocation after the restart still reaches both
    expect(await status(b, fresh.secret)).toBe(200);
    expect((await runCli("svc-gateway", ["keys", "revoke", fresh.id, "--database", database])).code).toBe(0);
    for (const gateway of [a, b]) await expect.poll(() => status(gateway, fresh.secret), { timeout: 1_000, interval: 50 }).toBe(401);
  });
});

describe("Running more than one gateway: rate limits across replicas", () => {
  it("a key at --key-rpm 60 gets about 60 of 120 requests spread alternately over both gateways; the rest 429 rate_limited", async () => {
    const key = await createKey("rate-limited");
    const started = performance.now();
    const answers: Response[] = [];
    for (let i = 0; i < 120; i++) answers.push(await fetch(`${(i % 2 === 0 ? a : b).url}/v1/models`, { headers: { authorization: `Bearer ${key.secret}` } }));
    const elapsedS = (performance.now() - started) / 1000;
    const admitted = answers.filter((r) => r.status === 200).length;
    // the limit is a bucket of 60 refilled at 1 a second: a loaded machine that takes longer earns that refill
    expect(admitted, `${admitted} admitted in ${elapsedS.toFixed(1)} s`).toBeGreaterThanOrEqual(54);
    expect(admitted, `${admitted} admitted in ${elapsedS.toFixed(1)} s`).toBeLessThanOrEqual(66 + Math.floor(elapsedS));
    // both gateways admitted a share, and refused a share
    for (const parity of [0, 1]) {
      const own = answers.filter((_, i) => i % 2 === parity).map((r) => r.status);
      expect(own).toContain(200);
      expect(own).toContain(429);
    }
    for (const refused of answers.filter((r) => r.status !== 200)) {
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(((await refused.json()) as { error: unknown }).error).toEqual({
        message: "This API key is over its limit of 60 requests per minute; retry after the Retry-After seconds.",
        type: "rate_limit_error",
        code: "rate_limited",
        param: null,
        svc_action: "wait",
      });
    }
    for (const ok of answers.filter((r) => r.status === 200)) await ok.arrayBuffer();
  });
});

describe("Running more than one gateway: `keys migrate` and a bad --database", () => {
  it("`keys migrate --from-data-dir DIR --database URL` moves users and keys; the old secrets work against the database", async () => {
    const tiny = makeTinyCatalog([{ alias: "qwen3-4b", seed: 1 }]);
    try {
      const dataDir = join(tiny.dir, "old-gateway");
      const old = await openKeyStore({ dataDir });
      const made = await old.createKey(await old.upsertUser({ issuer: "https://id.old", subject: "fay", email: "fay@example.test", name: "Fay" }), "kept");
      await old.close();
      const [keyId, secret] = [made.key.id, made.secret];
      const target = await postgres.freshDatabase();
      const moved = await runCli("svc-gateway", ["keys", "migrate", "--from-data-dir", dataDir, "--database", target]);
      expect([moved.code, moved.stderr]).toEqual([0, ""]);
      expect(moved.stdout).toMatch(/^svc-gateway: copied 1 users, 1 api_keys, 0 sessions, 0 provider_tokens, 0 usage_days into postgres:\/\/svc@127\.0\.0\.1:\d+\/t\d+\n$/);
      // once moved, these read or refuse without writing: side by side
      const [listed, twice, nowhere] = await Promise.all([
        runCli("svc-gateway", ["keys", "list", "--database", target]),
        runCli("svc-gateway", ["keys", "migrate", "--from-data-dir", dataDir, "--database", target]),
        runCli("svc-gateway", ["keys", "migrate", "--from-data-dir", join(tiny.dir, "none"), "--database", target]),
      ]);
      expect(listed.stdout).toContain(`${keyId}  sk-svc_`);
      expect(listed.stdout).toContain(`fay@example.test  "kept"  live`);
      const store = await PostgresKeyStore.open(target);
      expect(await store.liveKey(secretHash(secret))).toMatchObject({ keyId });
      await store.close();
      expect([twice.code, twice.stderr]).toEqual([1, "svc-gateway: --database: the target key store already holds users; migrate into an empty database\n"]);
      expect([nowhere.code, nowhere.stderr]).toEqual([1, `svc-gateway: --from-data-dir ${join(tiny.dir, "none")}: no key store there (${join(tiny.dir, "none", "keys.sqlite")})\n`]);
    } finally {
      tiny.cleanup();
    }
  });

  it.each([
    ["not a postgres URL", "mysql://db.example/keys", "expected a postgres:// or postgresql:// URL"],
    ["nothing listening", "postgres://svc:hunter2@127.0.0.1:1/keys", "cannot open the key store"],
  ])("%s: serve and keys list are one line naming --database, exit 2, no stack, no password", async (_why, url, says) => {
    const tiny = makeTinyCatalog([{ alias: "qwen3-4b", seed: 1 }]);
    try {
      const serve = startProcess(GATEWAY_BIN, ["serve", "--port", "0", "--coordinator-port", "0", "--data-dir", join(tiny.dir, "g")], {
        env: { SVC_DATABASE_URL: url },
      });
      // serve and keys list side by side
      const [code, listed] = await Promise.all([
        new Promise<number | null>((resolve) => serve.child.once("close", resolve)),
        runCli("svc-gateway", ["keys", "list", "--database", url]),
      ]);
      for (const result of [{ code, stderr: serve.stderr() }, listed]) {
        expect(result.code).toBe(2);
        const lines = result.stderr.trim().split("\n");
        expect(lines).toHaveLength(1);
        expect(lines[0]).toMatch(/^svc-gateway: --database (postgres|mysql):\/\//);
        expect(lines[0]).toContain(says);
        expect(result.stderr).not.toContain("hunter2");
        expect(result.stderr).not.toMatch(/\n\s+at /);
      }
    } finally {
      tiny.cleanup();
    }
  });
});
