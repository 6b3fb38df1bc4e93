// Issue 19 part 5 end to end: a real gateway, identity provider and agent, and the settings page in headless
// Chromium. Completions made with a key show on its chart with the numbers the key store holds; an admin
// sees totals per user and per provider; anyone else is refused. Screenshots are taken in the test.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DailyUsage, UsageCounts } from "../../gateway/keys/key-store.ts";
import { SqliteKeyStore } from "../../gateway/keys/sqlite-store.ts";
import { sumCounts, USAGE_DAYS, usageWindow } from "../../gateway/keys/usage.ts";
import { createKey, signIn } from "../fixtures/browser.ts";
import { runCli } from "../../harness/cli.ts";
import { OPERATOR_KEY, type AgentProcess } from "../fixtures/gateway.ts";
import { startSettingsStack, type SettingsGateway, type SettingsStack } from "../fixtures/settings-gateway.ts";

let gateway: SettingsGateway;
let agent: AgentProcess;
let browser: Browser;
const shots = mkdtempSync(join(tmpdir(), "svc-usage-shots-"));

let stack: SettingsStack | undefined;

beforeAll(async () => {
  stack = await startSettingsStack({ adminEmails: "Root@Example.test, unverified-root@example.test" });
  ({ gateway, agent, browser } = stack);
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  rmSync(shots, { recursive: true, force: true });
});

/** The store's per-day rows over the window, read from the gateway's own SQLite file. */
async function storedRows(): Promise<DailyUsage[]> {
  const store = SqliteKeyStore.open(gateway.dataDir);
  try {
    return await store.dailyUsage(usageWindow(USAGE_DAYS)[0]!);
  } finally {
    await store.close();
  }
}

async function complete(apiKey: string, content: string, maxTokens: number): Promise<UsageCounts> {
  const client = new OpenAI({ apiKey, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
  const { usage } = await client.chat.completions.create({ model: "qwen3-4b", messages: [{ role: "user", content }], max_tokens: maxTokens });
  return { requests: 1, promptTokens: usage!.prompt_tokens, completionTokens: usage!.completion_tokens };
}

/** A full-page PNG under the test's temp dir, checked to be a real, non-empty PNG. */
async function screenshot(page: Page, name: string): Promise<void> {
  const path = join(shots, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  const png = readFileSync(path);
  expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  expect(png.length).toBeGreaterThan(1_000);
}

const numberAttr = async (page: Page, selector: string, name: string) => Number(await page.locator(selector).getAttribute(name));

describe("usage on the settings page", () => {
  let aliceKey: { id: string; secret: string };
  let aliceUsage: UsageCounts;

  it("each key's requests and prompt/completion tokens per day are charted, with the numbers the store holds", async () => {
    const context = await browser.newContext({ viewport: { width: 900, height: 800 } });
    const page = await context.newPage();
    await signIn(page, gateway.url, "alice");
    aliceKey = await createKey(page, gateway.url, "laptop <b>");
    const idle = await createKey(page, gateway.url, "idle");
    const made = [await complete(aliceKey.secret, "Hello", 4), await complete(aliceKey.secret, "Count to three", 6), await complete(aliceKey.secret, "Hi", 3)];
    aliceUsage = sumCounts(made);
    expect(aliceUsage.requests).toBe(3);

    await page.goto(`${gateway.url}/settings`);
    const article = page.locator(`article[data-key-id="${aliceKey.id}"]`);
    await expect.poll(() => article.locator("[data-total=requests]").getAttribute("data-value")).toBe("3");
    await screenshot(page, "settings-usage");

    // the store's rows for this key, all served by the one agent, agree with what the SDK was told
    const rows = (await storedRows()).filter((r) => r.keyId === aliceKey.id);
    expect(new Set(rows.map((r) => r.providerId))).toEqual(new Set([agent.providerId]));
    expect(sumCounts(rows)).toEqual(aliceUsage);

    // the page's totals and each day's bar carry the store's numbers
    const total = (name: string) => numberAttr(page, `article[data-key-id="${aliceKey.id}"] [data-total=${name}]`, "data-value");
    expect({ requests: await total("requests"), promptTokens: await total("prompt-tokens"), completionTokens: await total("completion-tokens") }).toEqual(aliceUsage);
    const bars = article.locator("svg.usage-chart g.day");
    expect(await bars.count()).toBe(USAGE_DAYS);
    expect(await bars.first().getAttribute("data-day")).toBe(usageWindow(USAGE_DAYS)[0]);
    for (const row of rows) {
      const bar = `article[data-key-id="${aliceKey.id}"] g.day[data-day="${row.day}"]`;
      expect(await numberAttr(page, bar, "data-requests")).toBe(row.requests);
      expect(await numberAttr(page, bar, "data-prompt-tokens")).toBe(row.promptTokens);
      expect(await numberAttr(page, bar, "data-completion-tokens")).toBe(row.completionTokens);
      expect(await page.locator(`${bar} rect.prompt`).count()).toBe(1);
      expect(await page.locator(`${bar} title`).textContent()).toBe(
        `${row.day}: ${row.requests} requests, ${row.promptTokens} prompt + ${row.completionTokens} completion tokens`,
      );
    }
    expect(await article.getByRole("heading").textContent()).toContain("laptop <b>"); // text, not markup
    expect(await article.locator("[data-last-used]").textContent()).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/);
    expect(await page.locator(`article[data-key-id="${idle.id}"]`).textContent()).toContain(`Not used in the last ${USAGE_DAYS} days.`);
    expect(await page.locator(`article[data-key-id="${idle.id}"] svg`).count()).toBe(0);
    // not an admin: no link to everyone's usage
    expect(await page.getByRole("link", { name: /Every user's/ }).count()).toBe(0);
    await context.close();
  });

  it("an admin sees totals per user and per provider; operator keys are counted too", async () => {
    const operator = await complete(OPERATOR_KEY, "Hello from the operator", 5);
    const context = await browser.newContext({ viewport: { width: 900, height: 800 } });
    const page = await context.newPage();
    await signIn(page, gateway.url, "root"); // root@example.test, on SVC_ADMIN_EMAILS in another case
    await Promise.all([page.waitForURL(`${gateway.url}/settings/usage`), page.getByRole("link", { name: /Every user's/ }).click()]);
    await screenshot(page, "operator-usage");

    const cells = async (table: string, who: string) =>
      (await page.locator(`#${table} tr`, { has: page.getByRole("rowheader", { name: who, exact: true }) }).getByRole("cell").allTextContents());
    // alice has two keys, one of them used: keys, requests, prompt and completion tokens
    expect((await cells("usage-by-user", "alice@example.test")).slice(0, 4)).toEqual(
      ["1", String(aliceUsage.requests), String(aliceUsage.promptTokens), String(aliceUsage.completionTokens)],
    );
    expect((await cells("usage-by-user", "operator keys (SVC_OPERATOR_KEYS)")).slice(0, 4)).toEqual(
      ["1", String(operator.requests), String(operator.promptTokens), String(operator.completionTokens)],
    );
    const all = sumCounts((await storedRows()));
    expect(all).toEqual(sumCounts([aliceUsage, operator]));
    expect((await cells("usage-by-provider", agent.providerId)).slice(0, 3)).toEqual([String(all.requests), String(all.promptTokens), String(all.completionTokens)]);
    await context.close();
  });

  it("anyone else is refused: a signed-in user (or an unverified admin address) gets 403, a user key 403 in the SPEC envelope, signed out goes to sign-in", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await signIn(page, gateway.url, "bob");
    const refused = await page.goto(`${gateway.url}/settings/usage`);
    expect(refused!.status()).toBe(403);
    expect(await page.getByRole("alert").textContent()).toContain("Only operators");
    await context.close();

    // an address the identity provider has not verified is not kept, so it cannot match the admin list
    const unverified = await browser.newContext();
    const impostor = await unverified.newPage();
    await signIn(impostor, gateway.url, "unverified-root");
    expect(await impostor.locator("header").textContent()).toContain("Signed in as Test unverified-root");
    expect((await impostor.goto(`${gateway.url}/settings/usage`))!.status()).toBe(403);
    await unverified.close();

    const asUser = await fetch(`${gateway.url}/settings/usage`, { headers: { authorization: `Bearer ${aliceKey.secret}` } });
    expect(asUser.status).toBe(403);
    expect(await asUser.json()).toEqual({
      error: { message: expect.stringContaining("Only operators"), type: "invalid_request_error", code: "operator_only", param: null, svc_action: "fix_key" },
    });
    const badKey = await fetch(`${gateway.url}/settings/usage`, { headers: { authorization: "Bearer sk-svc_not-a-key" } });
    expect(badKey.status).toBe(401);
    expect(((await badKey.json()) as { error: { code: string } }).error.code).toBe("invalid_api_key");
    const signedOut = await fetch(`${gateway.url}/settings/usage`, { redirect: "manual" });
    expect(signedOut.status).toBe(303);
    expect(signedOut.headers.get("location")).toBe("/settings");
  });

  it("an operator key reads the same totals as JSON, and `svc-gateway keys usage` prints them from the store", async () => {
    const res = await fetch(`${gateway.url}/settings/usage`, { headers: { authorization: `Bearer ${OPERATOR_KEY}` } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { object: string; since: string; providers: { provider: string; requests: number; prompt_tokens: number }[] };
    const all = sumCounts((await storedRows()));
    expect(body.object).toBe("usage");
    expect(body.since).toBe(usageWindow(USAGE_DAYS)[0]);
    expect(body.providers).toEqual([{ provider: agent.providerId, requests: all.requests, prompt_tokens: all.promptTokens, completion_tokens: all.completionTokens }]);

    const cli = await runCli("svc-gateway", ["keys", "usage", "--days", "7", "--data-dir", gateway.dataDir]);
    expect(cli.code).toBe(0);
    const line = cli.stdout.split("\n").find((l) => l.startsWith(aliceKey.id));
    expect(line?.split(/\s{2,}/)).toEqual([
      aliceKey.id, expect.stringMatching(/^sk-svc_/), "alice@example.test", '"laptop <b>"',
      String(aliceUsage.requests), String(aliceUsage.promptTokens), String(aliceUsage.completionTokens), expect.stringMatching(/^\d{4}-/),
    ]);
    expect(cli.stdout).toMatch(new RegExp(`^${agent.providerId}\\s+${all.requests}\\s+${all.promptTokens}\\s+${all.completionTokens}$`, "m"));
  });
});
