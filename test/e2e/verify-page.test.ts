// The public page /verify end to end: a real gateway and agent on the tiny model, real completions saved as
// JSON and as SSE transcripts, and the page driven in headless Chromium, which must check them without sending
// a single request beyond the page's own files.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verificationReport } from "../../gateway/web/verify/report.ts";
import { launchBrowser } from "../fixtures/browser.ts";
import { post, startGateway, type GatewayProcess } from "../fixtures/gateway.ts";
import { readSse } from "../../harness/sse.ts";

let gateway: GatewayProcess;
let browser: Browser;
/** A real completion as `curl … > r.json` saves it, and a stream as `curl -N … > r.sse` does. */
let json: string;
let sse: string;

const ask = { model: "qwen3-4b", messages: [{ role: "user", content: "Say hello." }], max_tokens: 12, temperature: 1, seed: 7 };

beforeAll(async () => {
  gateway = await startGateway({ aliases: [{ alias: "qwen3-4b", seed: 1 }, { alias: "tiny-embed", seed: 3, kind: "embedding" }] });
  json = await (await post(gateway, "/v1/chat/completions", ask)).text();
  sse = (await readSse(await post(gateway, "/v1/chat/completions", { ...ask, stream: true }))).raw;
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await gateway?.stop();
});

/** Opens /verify and records every request the page makes from then on, and every script error. */
async function openVerifyPage(): Promise<{ page: Page; requests: string[]; errors: string[] }> {
  const page = await browser.newPage();
  const requests: string[] = [];
  const errors: string[] = [];
  page.on("request", (request) => requests.push(request.url()));
  page.on("pageerror", (error) => errors.push(error.message));
  await page.goto(`${gateway.url}/verify`);
  await page.waitForLoadState("load");
  return { page, requests, errors };
}

async function verifyText(page: Page, text: string, providerId = ""): Promise<void> {
  await page.fill("#saved", text);
  await page.fill("#provider-id", providerId);
  await page.getByRole("button", { name: "Verify" }).click();
}

const verdict = (page: Page) => page.locator("#verdict");
const row = (page: Page, check: string) => page.locator(`#checks li[data-check="${check}"]`).first();

describe("GET /verify: public, and no request leaves the browser", () => {
  it("needs no key or sign-in, and its policy lets only the page's own script run and nothing be sent", async () => {
    const res = await fetch(`${gateway.url}/verify`);
    expect(res.status).toBe(200);
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("form-action 'none'");
    expect(csp).not.toContain("unsafe");
    const script = await fetch(`${gateway.url}/verify/assets/verify.js`);
    expect(script.headers.get("content-type")).toMatch(/^text\/javascript/);
    expect(await script.text()).not.toMatch(/\bBuffer\b/);
    const posted = await fetch(`${gateway.url}/verify`, { method: "POST" });
    expect(posted.status).toBe(405);
    expect(posted.headers.get("allow")).toBe("GET, HEAD");
    expect((await fetch(`${gateway.url}/verify/nothing`)).status).toBe(404);
  });

  it("a saved JSON response with its provider id is valid; one changed byte of the content names response_sha256", async () => {
    const { page, requests, errors } = await openVerifyPage();
    expect(requests.map((u) => new URL(u).pathname).filter((p) => p !== "/favicon.ico").sort()).toEqual(
      ["/settings/assets/settings.css", "/verify", "/verify/assets/verify.css", "/verify/assets/verify.js"],
    );
    requests.length = 0;

    await verifyText(page, json, gateway.providerId);
    await expect.poll(() => verdict(page).getAttribute("data-status")).toBe("valid");
    expect(await verdict(page).textContent()).toContain(`signed by provider ${gateway.providerId}`);
    for (const check of ["signature", "provider_id", "provider", "model", "response_sha256", "usage", "finish_reason"]) {
      expect(await row(page, check).getAttribute("data-result"), check).toBe("pass");
    }
    expect(await row(page, "request_sha256").getAttribute("data-result")).toBe("not checked");
    expect(await row(page, "client_nonce").getAttribute("data-result")).toBe("not checked");

    const body = JSON.parse(json) as { choices: [{ message: { content: string } }] };
    const content = body.choices[0].message.content;
    expect(content.length).toBeGreaterThan(0);
    body.choices[0].message.content = (content[0] === "x" ? "y" : "x") + content.slice(1);
    await verifyText(page, JSON.stringify(body), gateway.providerId);
    await expect.poll(() => verdict(page).getAttribute("data-status")).toBe("invalid");
    expect(await verdict(page).textContent()).toContain("response_sha256");
    expect(await row(page, "response_sha256").getAttribute("data-result")).toBe("fail");
    expect(await row(page, "response_sha256").textContent()).toContain("the content in the file is not the content the provider signed");
    expect(await row(page, "signature").getAttribute("data-result")).toBe("pass");

    // without the provider id nothing ties the key to a provider: at best unverified
    await verifyText(page, json);
    await expect.poll(() => verdict(page).getAttribute("data-status")).toBe("unverified");
    expect(requests).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("a saved SSE transcript, chosen as a file, is valid; a v2 stream with tool calls, dropped on the page, too", async () => {
    const { page, requests, errors } = await openVerifyPage();
    requests.length = 0;
    await page.fill("#provider-id", gateway.providerId);
    await page.setInputFiles("#saved-file", { name: "r.sse", mimeType: "text/event-stream", buffer: Buffer.from(sse) });
    await expect.poll(() => verdict(page).getAttribute("data-status")).toBe("valid");
    expect(await row(page, "file").textContent()).toContain("an SSE transcript");
    expect(await row(page, "response_sha256").getAttribute("data-result")).toBe("pass");

    const tools = [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string", maxLength: 12 } }, required: ["city"] } } }];
    const called = (await readSse(await post(gateway, "/v1/chat/completions", { ...ask, max_tokens: 60, tools, tool_choice: "required", stream: true }))).raw;
    expect(called).toContain('"tool_calls":[{"index":0');
    // a file dropped on the text area, as a desktop drag would bring it (a string: tests have no DOM types)
    const dropped = await page.evaluateHandle(
      `(() => { const t = new DataTransfer(); t.items.add(new File([${JSON.stringify(called)}], "tools.sse")); return t; })()`,
    );
    await page.dispatchEvent("#saved", "drop", { dataTransfer: dropped });
    // the transcript before it covered no calls (null): this row changes only once the dropped file is checked
    await expect.poll(() => row(page, "tool_calls_sha256").textContent()).toMatch(/tool_calls_sha256 .* is [0-9a-f]{64}/);
    expect(await row(page, "tool_calls_sha256").getAttribute("data-result")).toBe("pass");
    expect(await verdict(page).getAttribute("data-status")).toBe("valid");
    expect(requests).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });
});

describe("GET /verify: saved answers of the other routes", () => {
  it("a legacy completions transcript and an embeddings body are valid; a changed vector names response_sha256", async () => {
    const legacy = (await readSse(await post(gateway, "/v1/completions", { model: "qwen3-4b", prompt: "Once", max_tokens: 6, seed: 2, stream: true }))).raw;
    const embeddings = await (await post(gateway, "/v1/embeddings", { model: "tiny-embed", input: ["red", "green"] })).text();
    const { page, requests, errors } = await openVerifyPage();
    requests.length = 0;
    for (const [text, kind] of [[legacy, "a legacy completions SSE transcript"], [embeddings, "an embeddings response"]] as const) {
      await verifyText(page, text, gateway.providerId);
      await expect.poll(() => row(page, "file").textContent()).toContain(kind);
      expect(await verdict(page).getAttribute("data-status"), kind).toBe("valid");
      expect(await row(page, "response_sha256").getAttribute("data-result")).toBe("pass");
    }
    const body = JSON.parse(embeddings) as { data: { embedding: number[] }[] };
    body.data[0]!.embedding[0] = Math.fround(body.data[0]!.embedding[0]! / 2);
    await verifyText(page, JSON.stringify(body), gateway.providerId);
    await expect.poll(() => verdict(page).getAttribute("data-status")).toBe("invalid");
    expect(await row(page, "response_sha256").getAttribute("data-result")).toBe("fail");
    expect(requests).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });
});

describe("GET /verify: a file two JSON readers could read differently is invalid (RFC 8259 §4, RFC 7493)", () => {
  it("the content's name twice with the forged value first, pasted; a byte order mark and bytes that are not UTF-8, chosen as files", async () => {
    const { page, requests, errors } = await openVerifyPage();
    requests.length = 0;
    const content = (JSON.parse(json) as { choices: [{ message: { content: string } }] }).choices[0].message.content;
    const signed = `"content":${JSON.stringify(content)}`;
    expect(json).toContain(signed);
    // a reader that keeps the first value would show "Forged" beside a receipt that holds
    await verifyText(page, json.replace(signed, `"content":"Forged",${signed}`), gateway.providerId);
    await expect.poll(() => verdict(page).getAttribute("data-status")).toBe("invalid");
    expect(await row(page, "file").textContent()).toContain('the name "content" appears twice in one object');

    await page.fill("#provider-id", gateway.providerId);
    const files: [string, Buffer, string][] = [
      ["bom.json", Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(json)]), "the file starts with a byte order mark (U+FEFF)"],
      ["latin1.json", Buffer.concat([Buffer.from(json.slice(0, -1)), Buffer.from([0xe9, 0x7d])]), "the file is not UTF-8"],
    ];
    for (const [name, buffer, words] of files) {
      // the page's verdict of the valid file first, so each verdict below is the new file's
      await page.setInputFiles("#saved-file", { name: "ok.json", mimeType: "application/json", buffer: Buffer.from(json) });
      await expect.poll(() => verdict(page).getAttribute("data-status")).toBe("valid");
      await page.setInputFiles("#saved-file", { name, mimeType: "application/json", buffer });
      await expect.poll(() => verdict(page).getAttribute("data-status")).toBe("invalid");
      expect(await row(page, "file").textContent(), name).toContain(words);
    }
    expect(requests).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });
});

describe("the page's report in plain words (the same code, in node)", () => {
  it("says why a file is not a saved response, and what it could not check", () => {
    expect(verificationReport({ text: "hello" }, [])).toMatchObject({ status: "invalid", rows: [{ check: "file", result: "fail" }] });
    const report = verificationReport({ text: json, clientNonce: "not-the-nonce-sent-0" }, []);
    expect(report.status).toBe("invalid");
    expect(report.rows).toContainEqual(expect.objectContaining({ check: "client_nonce", result: "fail" }));
    expect(report.rows).toContainEqual(expect.objectContaining({ check: "model", result: "not checked", words: "this gateway's catalog has no model qwen3-4b" }));
    expect(report.rows).toContainEqual(expect.objectContaining({ check: "key_owner", result: "not checked" }));
  });
});
