// SPEC §5's key store across gateway restarts: a clean restart keeps every key (and the batched usage), a
// kill -9 in the middle of key creation leaves the SQLite file consistent, a user past --max-keys-per-user is
// refused with a page that says why, and without an identity provider the store's keys still work (the settings page
// is gone, not the keys: `svc-gateway keys create` makes them for such a gateway).
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { browserSession } from "../fixtures/browser.ts";
import { OPERATOR_KEY } from "../fixtures/gateway.ts";
import { runCli } from "../../harness/cli.ts";
import { startSettingsGateway, type SettingsGateway } from "../fixtures/settings-gateway.ts";
import { openSqlite, pragmaValue } from "../../gateway/keys/sqlite-driver.ts";

let gateway: SettingsGateway;
let cookie: string;
let csrf: string;
const MAX_KEYS = 25;

beforeAll(async () => {
  // room for every key the suite makes for erin (at most 24); the cap itself is tested with another user
  gateway = await startSettingsGateway({ args: ["--max-keys-per-user", String(MAX_KEYS)] });
  ({ cookie, csrf } = await browserSession(gateway.url, "erin"));
}, 120_000);

afterAll(async () => {
  await gateway?.stop();
});

function createKey(name: string, as = { cookie, csrf }): Promise<Response> {
  return fetch(`${gateway.url}/settings/keys`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie: as.cookie, origin: gateway.url },
    body: new URLSearchParams({ csrf: as.csrf, name }).toString(),
  });
}

const settings = async () => (await fetch(`${gateway.url}/settings`, { headers: { cookie } })).text();

/** Creates a key and reads its secret from the page it is shown on, once. */
async function createAndRead(name: string): Promise<string> {
  expect((await createKey(name)).status).toBe(303);
  const secret = /id="new-secret" class="secret" readonly value="(sk-svc_[^"]+)"/.exec(await settings())?.[1];
  expect(secret).toBeDefined();
  return secret!;
}

const status = async (key: string) => (await fetch(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).status;

describe("§5 Authentication: the key store", () => {
  it("the gateway restarted keeps every key, the signed-in session, and the last use counted before it stopped", async () => {
    const secrets = [await createAndRead("one"), await createAndRead("two")];
    expect(await status(secrets[0]!)).toBe(200);
    await gateway.proc.stop(); // SIGTERM: batched last-used times are written on the way out
    await gateway.restart();
    const page = await settings();
    expect(page).toContain("erin@example.test");
    const lastUsed = (name: string) => new RegExp(`<td>${name}</td><td><code>[^<]+</code></td><td>[^<]+</td><td>([^<]+)</td>`).exec(page)?.[1];
    expect(lastUsed("one")).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
    expect(lastUsed("two")).toBe("never");
    for (const secret of secrets) expect(await status(secret)).toBe(200);
  });

  it("kill -9 during key creation leaves the store consistent: every key handed out still works, no key is half written", async () => {
    const handedOut: string[] = [];
    for (let i = 0; i < 12; i++) handedOut.push(await createAndRead(`batch-${i}`));
    // creations in flight when the process dies: each is either wholly there or wholly absent
    const watcher = openSqlite(join(gateway.dataDir, "keys.sqlite"), { readOnly: true });
    const written = watcher.prepare<[], { n: number }>("SELECT count(*) AS n FROM api_keys WHERE name LIKE 'in-flight-%'");
    const inFlight = Array.from({ length: 8 }, (_, i) => createKey(`in-flight-${i}`).catch(() => undefined));
    try {
      // the gateway has demonstrably begun writing them: the first one's row is in the file (its WAL) already,
      // while no answer has been read; the kill lands while the rest are being written or still to come
      await expect.poll(() => written.get()!.n, { timeout: 10_000, interval: 1 }).toBeGreaterThan(0);
    } finally {
      watcher.close();
    }
    await gateway.proc.kill("SIGKILL");
    await Promise.all(inFlight);
    await gateway.restart();

    for (const secret of handedOut) expect(await status(secret)).toBe(200);
    const db = openSqlite(join(gateway.dataDir, "keys.sqlite"), { readOnly: true });
    try {
      expect(pragmaValue(db, "integrity_check")).toBe("ok");
      expect(db.prepare("PRAGMA foreign_key_check").all()).toEqual([]);
      const rows = db.prepare<[], Record<string, unknown>>("SELECT id, user_id, name, secret_sha256, prefix, created_at FROM api_keys").all();
      expect(rows.filter((r) => String(r.name).startsWith("batch-"))).toHaveLength(12);
      for (const row of rows) {
        expect(row.id).toMatch(/^key_[0-9a-f]{24}$/);
        expect(row.secret_sha256).toMatch(/^[0-9a-f]{64}$/);
        expect(row.prefix).toMatch(/^sk-svc_[A-Za-z0-9_-]{4}…$/);
        expect(row.created_at).toEqual(expect.any(Number));
      }
      // no secret is stored, in any column
      for (const secret of handedOut) expect(JSON.stringify(rows)).not.toContain(secret.slice(7));
      // the page lists exactly what the file holds
      expect((await settings()).match(/aria-label="Revoke /g)).toHaveLength(rows.length);
    } finally {
      db.close();
    }
  });

  it("past --max-keys-per-user the settings page refuses a new key with 409 and says why; revoking one makes room", async () => {
    const frank = await browserSession(gateway.url, "frank");
    for (let i = 0; i < MAX_KEYS; i++) expect((await createKey(`f-${i}`, frank)).status).toBe(303);
    const refused = await createKey("one-too-many", frank);
    expect(refused.status).toBe(409);
    expect(await refused.text()).toContain(
      `<p role="alert">You already have ${MAX_KEYS} live API keys, the most this gateway allows; revoke one you no longer use, then create a new one.</p>`,
    );
    const page = await (await fetch(`${gateway.url}/settings`, { headers: { cookie: frank.cookie } })).text();
    expect(page).not.toContain("one-too-many");
    const id = /\/settings\/keys\/(key_[0-9a-f]{24})\/revoke/.exec(page)![1]!;
    const revoked = await fetch(`${gateway.url}/settings/keys/${id}/revoke`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: frank.cookie, origin: gateway.url },
      body: new URLSearchParams({ csrf: frank.csrf }).toString(),
    });
    expect(revoked.status).toBe(303);
    expect((await createKey("replacement", frank)).status).toBe(303);
  });

  it("without an identity provider the settings page says so, and the store's keys still work: operator keys, a user's, and one `svc-gateway keys create` makes then (issue 44); a revoked one is refused", async () => {
    const userKey = await createAndRead("before-oidc-off");
    await gateway.proc.stop();
    await gateway.restart({ signIn: false });
    const page = await fetch(`${gateway.url}/settings`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("Sign-in is not configured on this gateway");
    expect((await fetch(`${gateway.url}/auth/login`, { redirect: "manual" })).status).toBe(404);
    expect(await status(OPERATOR_KEY)).toBe(200);
    expect(await status(userKey)).toBe(200);
    const made = await runCli("svc-gateway", ["keys", "create", "--user", "erin@example.test", "--name", "from-the-cli", "--json", "--data-dir", gateway.dataDir]);
    expect(made.code, made.stderr).toBe(0);
    const { id, secret } = JSON.parse(made.stdout) as { id: string; secret: string };
    expect(await status(secret)).toBe(200);
    const revoked = await runCli("svc-gateway", ["keys", "revoke", id, "--data-dir", gateway.dataDir]);
    expect(revoked.code, revoked.stderr).toBe(0);
    await expect.poll(() => status(secret), { timeout: 10_000 }).toBe(401);
  });
});
