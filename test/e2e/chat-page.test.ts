// The public page /chat end to end (issue 42 item 7): a real gateway and agent on the tiny model, the page driven in
// headless Chromium. A person types a key and a prompt and sees the answer stream in with a valid receipt, while
// everything the page sends is same-origin and sealed: no request body holds the prompt.
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser, ConsoleMessage, Request } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLIENT_DIST } from "../../client/build.ts";
import { browserBundle } from "../../gateway/web/bundle.ts";
import { launchBrowser } from "../fixtures/browser.ts";
import { startGateway, type GatewayProcess } from "../fixtures/gateway.ts";

const ROOT = join(import.meta.dirname, "..", "..");
let gateway: GatewayProcess;
let browser: Browser;

beforeAll(async () => {
  gateway = await startGateway({ aliases: [{ alias: "qwen3-4b", seed: 1 }, { alias: "tiny-embed", seed: 3, kind: "embedding" }] });
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await gateway?.stop();
});

describe("GET /chat: public, its scripts its own, and it may reach only its origin", () => {
  it("serves the page under /verify's policy plus connect-src 'self', and the client whose SHA-256 it names", async () => {
    const res = await fetch(`${gateway.url}/chat`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-security-policy")).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'; connect-src 'self'",
    );
    const page = await res.text();
    const client = await fetch(`${gateway.url}/chat/assets/svc-client.js`);
    expect(client.headers.get("content-type")).toMatch(/^text\/javascript/);
    const served = Buffer.from(await client.arrayBuffer());
    const sha256 = createHash("sha256").update(served).digest();
    // the bytes svc-agent-client ships as dist/browser.js, which a build from the sources also gives
    expect(served.equals(readFileSync(join(CLIENT_DIST, "browser.js")))).toBe(true);
    expect(served.toString("utf8")).toBe((await browserBundle(join(ROOT, "client", "index.ts"), "esm")).code);
    expect(page).toContain(`<code id="client-sha256">${sha256.toString("hex")}</code>`);
    expect(page).toContain(`href="/chat/assets/svc-client.js" integrity="sha256-${sha256.toString("base64")}"`);
    // the page's script imports the client from its own URL rather than carrying a copy
    const script = await (await fetch(`${gateway.url}/chat/assets/chat.js`)).text();
    expect(script).toContain("/chat/assets/svc-client.js");
    expect(script.length).toBeLessThan(10_000);
    expect((await fetch(`${gateway.url}/chat`, { method: "POST" })).status).toBe(405);
    expect((await fetch(`${gateway.url}/chat/nothing`)).status).toBe(404);
    // /verify links to it
    expect(await (await fetch(`${gateway.url}/verify`)).text()).toContain('<a href="/chat">');
  });
});

describe("DESIGN §10 Gateway-blind in a browser: the chat box", () => {
  it("a typed key and prompt stream an answer with a valid receipt; every request is same-origin, sealed and without the prompt", async () => {
    const page = await browser.newPage();
    const requests: Request[] = [];
    const errors: string[] = [];
    page.on("request", (request) => requests.push(request));
    page.on("pageerror", (error) => errors.push(`pageerror: ${error.message}`));
    // Chromium reports a CSP violation (and any other failure to load) as a console error; the page has no favicon
    page.on("console", (message: ConsoleMessage) => {
      if (message.type() === "error" && !message.location().url.endsWith("/favicon.ico")) errors.push(`console: ${message.text()}`);
    });
    await page.goto(`${gateway.url}/chat`);
    await page.waitForLoadState("load");
    expect(await page.inputValue("#floor")).toBe("process");
    expect(await page.inputValue("#alias")).toBe("qwen3-4b");

    const canary = `canary-${randomBytes(8).toString("hex")}`;
    await page.fill("#api-key", gateway.key);
    await page.fill("#prompt", `Repeat ${canary}`);
    await page.getByRole("button", { name: "Send" }).click();
    await expect.poll(() => page.locator("#verdict").getAttribute("data-status"), { timeout: 60_000 }).toBe("valid");
    expect(await page.locator("#verdict").textContent()).toMatch(/^valid/);
    expect((await page.locator("#answer").textContent())!.length).toBeGreaterThan(0);
    expect(await page.locator("#provider").textContent()).toBe(`${gateway.providerId} (process)`);
    expect(await page.locator("#failure").isHidden()).toBe(true);

    const origin = new URL(gateway.url).origin;
    expect(requests.map((r) => new URL(r.url()).origin)).toEqual(requests.map(() => origin));
    const posts = requests.filter((r) => r.method() === "POST");
    expect(posts.map((r) => new URL(r.url()).pathname)).toEqual(["/v1/chat/completions"]);
    for (const post of posts) {
      expect(post.headers()["content-type"]).toBe("application/svc-sealed+json");
      expect(post.postData()).not.toContain(canary);
    }
    // the listing and the evidence the client checked itself, read with the typed key
    const gets = requests.filter((r) => r.method() === "GET").map((r) => new URL(r.url()).pathname);
    expect(gets).toEqual(expect.arrayContaining(["/v1/providers", `/v1/providers/${gateway.providerId}/attestation`]));
    // the key went only as the bearer of those requests, and the page kept it nowhere but in its memory
    for (const request of requests.filter((r) => r.url().includes("/v1/"))) expect(request.headers().authorization).toBe(`Bearer ${gateway.key}`);
    expect(await page.evaluate("localStorage.length + sessionStorage.length")).toBe(0);
    expect(await page.context().cookies()).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("a wrong key is refused and the page says why, with no verdict", async () => {
    const page = await browser.newPage();
    await page.goto(`${gateway.url}/chat`);
    await page.fill("#api-key", "sk-wrong");
    await page.fill("#prompt", "Say hi");
    await page.getByRole("button", { name: "Send" }).click();
    await expect.poll(() => page.locator("#failure").isVisible(), { timeout: 30_000 }).toBe(true);
    expect(await page.locator("#failure").textContent()).toMatch(/401/);
    expect(await page.locator("#verdict").getAttribute("data-status")).toBeNull();
    await page.close();
  });
});
