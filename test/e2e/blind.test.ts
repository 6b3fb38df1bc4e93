// DESIGN §10 gateway-blind requests end to end (issue 42): the official openai SDK, unchanged but for
// `fetch: createSealedFetch(...)`, through a real gateway, coordinator and agent on a tiny model.
import { readFileSync } from "node:fs";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSealedFetch, verifyReceipt } from "../../client/index.ts";
import { startGateway, type GatewayProcess } from "../fixtures/gateway.ts";

let gw: GatewayProcess;
let catalog: unknown;

beforeAll(async () => {
  gw = await startGateway();
  catalog = JSON.parse(readFileSync(gw.tiny.catalogPath, "utf8"));
}, 120_000);
afterAll(async () => {
  await gw?.stop();
});

const normal = () => new OpenAI({ baseURL: gw.baseURL, apiKey: gw.key, maxRetries: 0 });
/** The SDK as a caller switches it to blind mode: one option more. */
const blind = (baseURL = gw.baseURL) => new OpenAI({ baseURL, apiKey: gw.key, maxRetries: 0, fetch: createSealedFetch({ baseURL, apiKey: gw.key, catalog }) });
const ask = (content: string) => ({ model: "qwen3-4b", messages: [{ role: "user" as const, content }], max_tokens: 8, temperature: 0 });

async function collect(stream: AsyncIterable<OpenAI.ChatCompletionChunk>): Promise<OpenAI.ChatCompletionChunk[]> {
  const chunks: OpenAI.ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

describe("DESIGN §10 Gateway-blind: the openai SDK works unchanged with fetch: createSealedFetch", () => {
  it("create: the same answer as the normal path, in the same shape, with a receipt for the provider that answered", async () => {
    const plain = await normal().chat.completions.create(ask("Say hi"));
    const { data: sealed, response } = await blind().chat.completions.create(ask("Say hi")).withResponse();
    expect(Object.keys(sealed).sort()).toEqual(Object.keys(plain).sort());
    expect(sealed.choices).toEqual(plain.choices);
    // the same key's prompt cache served the sealed request: the scope the gateway sent beside it is the caller's
    expect(sealed.usage).toEqual({ ...plain.usage, prompt_tokens_details: { cached_tokens: expect.any(Number) } });
    expect(sealed.usage!.prompt_tokens_details!.cached_tokens).toBeGreaterThan(0);
    expect(response.headers.get("x-svc-provider")).toBe(gw.providerId);
    const receipt = (sealed as unknown as { svc_receipt: { provider_id: string } }).svc_receipt;
    expect(receipt.provider_id).toBe(gw.providerId);
    expect(verifyReceipt(receipt, { content: sealed.choices[0]!.message.content! }).problems).toEqual([]);
  });

  it("stream: the same chunks as the normal path, the receipt in the last, then the stream ends", async () => {
    const plain = await collect(await normal().chat.completions.create({ ...ask("Count"), stream: true }));
    const sealed = await collect(await blind().chat.completions.create({ ...ask("Count"), stream: true }));
    const text = (chunks: OpenAI.ChatCompletionChunk[]) => chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
    expect(text(sealed)).toBe(text(plain));
    expect(sealed.length).toBe(plain.length);
    expect(sealed.map((c) => Object.keys(c).sort())).toEqual(plain.map((c) => Object.keys(c).filter((k) => k !== "x_svc_timing").sort()));
    expect(sealed.at(-1)).toHaveProperty("svc_receipt.provider_id", gw.providerId);
  });
});
