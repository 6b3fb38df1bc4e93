// The settings page's parts without a server: markup that escapes what users and identity providers send,
// session and sign-in cookies that refuse tampering, CSRF tokens bound to one session, and the OIDC flags.
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SqliteKeyStore } from "../../../../gateway/keys/sqlite-store.ts";
import { html } from "../../../../gateway/web/html.ts";
import { NewKeyFlash } from "../../../../gateway/web/new-key-flash.ts";
import { pino } from "pino";
import { OidcClient, oidcSettings } from "../../../../gateway/web/oidc.ts";
import { notConfiguredPage, settingsPage } from "../../../../gateway/web/pages.ts";
import { loadCookieSecret, Sessions } from "../../../../gateway/web/session.ts";

const dir = mkdtempSync(join(tmpdir(), "svc-settings-"));
const store = SqliteKeyStore.open(dir);
afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Changes one character inside the last segment (a base64url final character may carry only padding bits). */
function flipSignatureChar(token: string): string {
  const at = token.lastIndexOf(".") + 5;
  return token.slice(0, at) + (token[at] === "A" ? "B" : "A") + token.slice(at + 1);
}

const user = { id: 1, email: "a@example.test", name: "A" };
const key = {
  id: "key_000000000000000000000001", name: "<script>alert(1)</script>", prefix: "sk-svc_ab12…", createdAt: 0,
  lastUsedAt: null, revokedAt: null, requests: 2, promptTokens: 10, completionTokens: 5,
};

describe("§5 Authentication: the settings page", () => {
  it("escapes every value it prints; markup only comes from the page itself", async () => {
    expect(html`<p>${`"'<&>`}</p>${html`<b>${"<i>"}</b>`}`.text).toBe("<p>&quot;&#39;&lt;&amp;&gt;</p><b>&lt;i&gt;</b>");
    const page = settingsPage({ user: { ...user, email: "<img src=x>" }, csrf: "t", keys: [key], created: [] });
    expect(page).not.toContain("<script>alert");
    expect(page).not.toContain("<img src=x>");
    expect(page).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
  });

  it("lists name, prefix, created, last used, requests and tokens, and shows a secret only when handed one", async () => {
    const page = settingsPage({ user, csrf: "t", keys: [{ ...key, name: "laptop" }], created: [] });
    expect(page).toContain("<td>laptop</td><td><code>sk-svc_ab12…</code></td><td>1970-01-01 00:00 UTC</td><td>never</td>");
    expect(page).toContain(`<td class="number" title="10 prompt + 5 completion">15</td>`);
    expect(page).not.toContain("new-secret");
    const once = settingsPage({ user, csrf: "t", keys: [], created: [{ name: "laptop", secret: "sk-svc_SECRET" }] });
    expect(once).toContain(`value="sk-svc_SECRET"`);
    expect(once).toContain("shown only this once");
    const two = settingsPage({ user, csrf: "t", keys: [], created: [{ name: "a", secret: "sk-svc_A" }, { name: "b", secret: "sk-svc_B" }] });
    expect(two).toContain(`<input id="new-secret" class="secret" readonly value="sk-svc_A"`);
    expect(two).toContain(`<input id="new-secret-1" class="secret" readonly value="sk-svc_B"`);
  });

  it("without sign-in configured, says plainly which keys work: operator keys and the store's user keys", async () => {
    const page = notConfiguredPage();
    expect(page).toContain("Sign-in is not configured on this gateway");
    expect(page).toContain("SVC_OPERATOR_KEYS");
    expect(page).toContain("svc-gateway keys create");
  });

  it("new secrets are handed out once each, and two made before the page loads are both kept", async () => {
    const flash = new NewKeyFlash();
    flash.put("s", { name: "a", secret: "sk-svc_A" });
    flash.put("s", { name: "b", secret: "sk-svc_B" });
    flash.put("other", { name: "c", secret: "sk-svc_C" });
    expect(flash.take("s").map((k) => k.secret)).toEqual(["sk-svc_A", "sk-svc_B"]);
    expect(flash.take("s")).toEqual([]);
    expect(flash.take("other").map((k) => k.name)).toEqual(["c"]);
  });

  it("the cookie secret is made once under the data dir, readable by its owner only", async () => {
    const secret = loadCookieSecret(dir);
    expect(secret).toHaveLength(32);
    expect(loadCookieSecret(dir).equals(secret)).toBe(true);
    expect(statSync(join(dir, "session-secret")).mode & 0o777).toBe(0o600);
  });

  it("the session cookie is HttpOnly, SameSite=Lax, signed, with an expiry, and Secure when the public URL is https", async () => {
    const userId = await store.upsertUser({ issuer: "https://id.example", subject: "s", email: "s@example.test", name: null });
    const sessions = new Sessions(loadCookieSecret(dir), store, true);
    const setCookie = await sessions.start(userId);
    expect(setCookie).toMatch(/^svc_session=[\w-]+\.[\w-]+\.[\w-]+; Max-Age=43200; Path=\/; HttpOnly; Secure; SameSite=Lax$/);
    const cookie = setCookie.split(";")[0]!;
    const signedIn = await sessions.read(cookie);
    expect(signedIn?.user).toEqual({ id: userId, email: "s@example.test", name: null });
    expect(await sessions.read(flipSignatureChar(cookie))).toBeUndefined();
    const other = new Sessions(Buffer.alloc(32, 7), store, false); // another gateway's secret
    expect(await other.read(cookie)).toBeUndefined();
    expect((await other.start(userId)).includes("Secure")).toBe(false);
  });

  it("CSRF tokens are bound to their session", async () => {
    const sessions = new Sessions(loadCookieSecret(dir), store, false);
    const token = sessions.csrfToken("session-a");
    expect(sessions.checkCsrf("session-a", token)).toBe(true);
    expect(sessions.checkCsrf("session-b", token)).toBe(false);
    for (const bad of [undefined, "", token.slice(1), `${token}x`]) expect(sessions.checkCsrf("session-a", bad)).toBe(false);
  });

  it("the sign-in transaction (state, nonce, PKCE verifier) travels encrypted and comes back only untouched", async () => {
    const sessions = new Sessions(loadCookieSecret(dir), store, false);
    const transaction = { state: "st", nonce: "no", verifier: "ve" };
    const setCookie = await sessions.saveLogin(transaction);
    expect(setCookie).toMatch(/; Max-Age=600; Path=\/auth\/; HttpOnly; SameSite=Lax$/);
    const cookie = setCookie.split(";")[0]!;
    for (const field of Object.values(transaction)) expect(cookie).not.toContain(`"${field}"`);
    expect(await sessions.readLogin(cookie)).toEqual(transaction);
    expect(await sessions.readLogin(flipSignatureChar(cookie))).toBeUndefined();
    expect(await sessions.readLogin(undefined)).toBeUndefined();
  });

  it("--oidc-issuer needs a client id and a public URL, both https except on loopback", async () => {
    const good = { issuer: "https://accounts.example.com", clientId: "c", publicUrl: "https://svc.example.com/" };
    expect(oidcSettings(good).publicUrl.href).toBe("https://svc.example.com/");
    expect(oidcSettings({ ...good, issuer: "http://127.0.0.1:9000" }).issuer.host).toBe("127.0.0.1:9000");
    expect(() => oidcSettings({ ...good, clientId: undefined })).toThrow("--oidc-issuer needs --oidc-client-id");
    expect(() => oidcSettings({ ...good, publicUrl: undefined })).toThrow(/needs --public-url/);
    expect(() => oidcSettings({ ...good, issuer: "http://id.example.com" })).toThrow(/--oidc-issuer must be https/);
    expect(() => oidcSettings({ ...good, publicUrl: "not a url" })).toThrow(/--public-url not a url is not a URL/);
  });

  it("an identity provider that cannot be reached makes sign-in 503 sign_in_unavailable, and is asked again next time", async () => {
    const settings = oidcSettings({ issuer: "http://127.0.0.1:9", clientId: "c", publicUrl: "http://127.0.0.1:8080" });
    const oidc = new OidcClient(settings, pino({ level: "silent" }));
    for (let i = 0; i < 2; i++) {
      await expect(oidc.begin()).rejects.toMatchObject({ code: "sign_in_unavailable", status: 503 });
    }
  });

  it("a callback carrying the identity provider's error says what the provider said", async () => {
    // just enough of an issuer for discovery: the error comes back before any token request
    const server = createServer((_req, res) => {
      const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ issuer, authorization_endpoint: `${issuer}/auth`, token_endpoint: `${issuer}/token`, jwks_uri: `${issuer}/jwks`, response_types_supported: ["code"] }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const oidc = new OidcClient(oidcSettings({ issuer: `http://127.0.0.1:${port}`, clientId: "c", publicUrl: "http://127.0.0.1:8080" }), pino({ level: "silent" }));
      const { transaction } = await oidc.begin();
      const search = `?error=access_denied&error_description=${encodeURIComponent("The user said no")}&state=${transaction.state}`;
      await expect(oidc.finish(search, transaction)).rejects.toMatchObject({
        code: "sign_in_failed",
        message: expect.stringContaining("the identity provider said access_denied: The user said no"),
      });
    } finally {
      server.close();
    }
  });
});
