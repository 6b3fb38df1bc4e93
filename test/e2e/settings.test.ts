// SPEC §5 end to end: a real OpenID provider on loopback, the real gateway and agent processes, and the
// settings page driven in headless Chromium. Keys are made by a signed-in user, the secret is shown once,
// and the key store is a real SQLite file under the gateway's data dir.
import OpenAI from "openai";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey as createPageKey, loginAtProvider, signIn, startSignIn } from "../fixtures/browser.ts";
import type { AgentProcess } from "../fixtures/gateway.ts";
import { forgeExpired } from "../fixtures/session-cookie.ts";
import { startSettingsStack, type SettingsGateway, type SettingsStack } from "../fixtures/settings-gateway.ts";

let gateway: SettingsGateway;
let agent: AgentProcess;
let browser: Browser;

let stack: SettingsStack | undefined;

beforeAll(async () => {
  stack = await startSettingsStack();
  ({ gateway, agent, browser } = stack);
}, 120_000);

afterAll(() => stack?.stop());

interface SignedInUser {
  context: BrowserContext;
  page: Page;
  cookie: string;
  csrf: string;
}

async function signedIn(login: string): Promise<SignedInUser> {
  const context = await browser.newContext({ permissions: ["clipboard-read", "clipboard-write"] });
  const page = await context.newPage();
  await signIn(page, gateway.url, login);
  const cookies = await context.cookies(gateway.url);
  const session = cookies.find((c) => c.name === "svc_session");
  expect(session).toMatchObject({ httpOnly: true, sameSite: "Lax", secure: false });
  return { context, page, cookie: `svc_session=${session!.value}`, csrf: await page.inputValue("form[action='/settings/keys'] input[name=csrf]") };
}

/** A form post as a browser on the settings page would send it (same origin), with the given cookie. */
function postForm(path: string, cookie: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${gateway.url}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie, origin: gateway.url, ...headers },
    body: new URLSearchParams(fields).toString(),
  });
}

const settingsHtml = async (cookie: string) => (await fetch(`${gateway.url}/settings`, { headers: { cookie } })).text();

const createKey = (page: Page, name: string) => createPageKey(page, gateway.url, name);

const client = (apiKey: string) => new OpenAI({ apiKey, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
const modelsStatus = async (key: string) => (await fetch(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).status;

describe("§5 Authentication", () => {
  it("a signed-in user creates a key on the settings page, the secret is displayed once, it works with the OpenAI SDK, and once revoked it gets 401 invalid_api_key", async () => {
    const alice = await signedIn("alice");
    expect(await alice.page.locator("header").textContent()).toContain("Signed in as alice@example.test");
    const { secret } = await createKey(alice.page, "laptop");
    expect(secret).toMatch(/^sk-svc_[A-Za-z0-9_-]{43}$/);
    expect(await alice.page.getByRole("alert").textContent()).toContain("shown only this once");

    await alice.page.getByRole("button", { name: "Copy" }).click();
    await alice.page.getByText("Copied to the clipboard.").waitFor();
    expect(await alice.page.evaluate("navigator.clipboard.readText()")).toBe(secret);

    const completion = await client(secret).chat.completions.create({
      model: "qwen3-4b",
      messages: [{ role: "user", content: "Hello" }],
      max_tokens: 4,
    });
    expect(completion.choices[0]!.message.role).toBe("assistant");
    const usage = completion.usage!;

    await alice.page.reload();
    expect(await alice.page.content()).not.toContain(secret);
    expect(await alice.page.locator("#new-secret").count()).toBe(0);
    const row = alice.page.getByRole("row", { name: /laptop/ });
    expect(await row.textContent()).toContain(`${secret.slice(0, 11)}…`);
    const cells = await row.getByRole("cell").allTextContents();
    // name, prefix, created, last used, requests, tokens (from the verified receipt), action
    expect(cells[3]).not.toBe("never");
    expect(cells.slice(4, 6)).toEqual(["1", String(usage.total_tokens)]);

    await Promise.all([alice.page.waitForURL(/\/revoke$/), row.getByRole("link", { name: "Revoke laptop" }).click()]);
    await Promise.all([alice.page.waitForURL(`${gateway.url}/settings`), alice.page.getByRole("button", { name: "Revoke key" }).click()]);
    expect(await alice.page.getByRole("row", { name: /laptop/ }).textContent()).toContain("Revoked");

    const refused = await client(secret).chat.completions.create({ model: "qwen3-4b", messages: [{ role: "user", content: "Hi" }] }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((refused as InstanceType<typeof OpenAI.AuthenticationError>).error).toEqual({
      message: expect.any(String), type: "invalid_request_error", code: "invalid_api_key", param: null, svc_action: "fix_key",
    });
    await alice.context.close();
  });

  it("a user sees only their own keys and cannot see or revoke another user's through the form endpoints", async () => {
    const alice = await signedIn("alice");
    const bob = await signedIn("bob");
    const aliceKey = await createKey(alice.page, "alice-server");
    const bobPage = await settingsHtml(bob.cookie);
    for (const trace of [aliceKey.id, "alice-server", aliceKey.secret.slice(0, 11)]) expect(bobPage).not.toContain(trace);

    const confirm = await fetch(`${gateway.url}/settings/keys/${aliceKey.id}/revoke`, { headers: { cookie: bob.cookie } });
    expect(confirm.status).toBe(404);
    expect(await confirm.text()).not.toContain("alice-server");
    const revoke = await postForm(`/settings/keys/${aliceKey.id}/revoke`, bob.cookie, { csrf: bob.csrf });
    expect(revoke.status).toBe(404);
    // alice's CSRF token is bound to alice's session: it does not help bob either
    expect((await postForm(`/settings/keys/${aliceKey.id}/revoke`, bob.cookie, { csrf: alice.csrf })).status).toBe(403);

    expect(await modelsStatus(aliceKey.secret)).toBe(200);
    expect(await settingsHtml(alice.cookie)).toContain(`aria-label="Revoke alice-server"`);
    await Promise.all([alice.context.close(), bob.context.close()]);
  });

  it("a forged, expired or signed-out session cookie is refused", async () => {
    const carol = await signedIn("carol");
    const before = await settingsHtml(carol.cookie);
    const [head, payload, signature] = carol.cookie.slice("svc_session=".length).split(".") as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString()) as Record<string, unknown>;
    const reencode = (changes: Record<string, unknown>) => Buffer.from(JSON.stringify({ ...claims, ...changes })).toString("base64url");
    // a middle character: the last one of a base64url signature may carry only padding bits
    const flipped = signature.slice(0, 10) + (signature[10] === "A" ? "B" : "A") + signature.slice(11);
    const forged = [
      `${head}.${payload}.${flipped}`, // a signature that does not verify
      `${head}.${reencode({ sub: "999999" })}.${signature}`, // another user id under carol's signature
      `${head}.${reencode({ exp: Math.floor(Date.now() / 1000) - 60 })}.${signature}`, // expiry edited away from the signed one
      `${Buffer.from('{"alg":"none"}').toString("base64url")}.${payload}.`,
      await forgeExpired(gateway.dataDir, claims), // signed with the gateway's own key, but expired
    ];
    for (const value of forged) {
      expect(await settingsHtml(`svc_session=${value}`)).toContain("Sign in to create and manage your API keys");
      expect((await postForm("/settings/keys", `svc_session=${value}`, { csrf: carol.csrf, name: "forged" })).status).toBe(401);
    }
    expect(before).toContain("carol@example.test");

    const signOut = await postForm("/auth/logout", carol.cookie, { csrf: carol.csrf });
    expect(signOut.status).toBe(303);
    expect(signOut.headers.get("set-cookie")).toMatch(/^svc_session=; Max-Age=0; Path=\/; HttpOnly; SameSite=Lax$/);
    // the old cookie is still validly signed, but its session has ended on the server
    expect(await settingsHtml(carol.cookie)).toContain("Sign in to create and manage your API keys");
    expect((await postForm("/settings/keys", carol.cookie, { csrf: carol.csrf, name: "after sign-out" })).status).toBe(401);
    await carol.context.close();
  });

  it("a form post without the session's CSRF token, or from another origin, is refused and changes nothing", async () => {
    const dave = await signedIn("dave");
    const { id } = await createKey(dave.page, "dave-ci");
    const attempts: [string, Record<string, string>, Record<string, string>][] = [
      ["/settings/keys", { name: "no token" }, {}],
      ["/settings/keys", { name: "wrong token", csrf: "x".repeat(43) }, {}],
      ["/settings/keys", { name: "cross site", csrf: dave.csrf }, { origin: "http://evil.example" }],
      ["/settings/keys", { name: "cross site", csrf: dave.csrf }, { "sec-fetch-site": "cross-site" }],
      [`/settings/keys/${id}/revoke`, {}, {}],
      ["/auth/logout", {}, {}],
    ];
    for (const [path, fields, headers] of attempts) {
      const res = await postForm(path, dave.cookie, fields, headers);
      expect(res.status, `${path} ${JSON.stringify(fields)} ${JSON.stringify(headers)}`).toBe(403);
    }
    const page = await settingsHtml(dave.cookie);
    expect(page).toContain("dave@example.test");
    expect(page.match(/aria-label="Revoke /g)).toEqual([`aria-label="Revoke `]);
    expect(page).toContain(`aria-label="Revoke dave-ci"`);
    await dave.context.close();
  });

  it("a sign-in callback whose state does not match is refused, as is one with no sign-in in progress", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    // two sign-ins started in one browser: the second replaces the first's state, so when the identity
    // provider honestly sends the first one back, its state is not the one the gateway expects
    await startSignIn(page, gateway.url);
    await startSignIn(await context.newPage(), gateway.url);
    const callback = page.waitForResponse((r) => r.url().startsWith(`${gateway.url}/auth/callback`));
    await loginAtProvider(page, gateway.url, "mallory");
    expect((await callback).status()).toBe(400);
    expect(await page.getByRole("alert").textContent()).toContain("state");
    expect((await context.cookies(gateway.url)).map((c) => c.name)).not.toContain("svc_session");

    const noLogin = await fetch(`${gateway.url}/auth/callback?code=abc&state=def`, { redirect: "manual" });
    expect(noLogin.status).toBe(400);
    expect(noLogin.headers.get("set-cookie") ?? "").not.toContain("svc_session=ey");
    await context.close();
  });
});
