// The official `openai` SDK against a real `svc-gateway serve`: SPEC §2.2 non-stream answers, §2.3 chunks with
// `for await`, and §7 errors surfacing as the SDK's error classes with their status.
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CATALOG_EPOCH } from "../../src/catalog.ts";
import { verifyReceipt } from "../../src/receipt/receipt.ts";
import { openaiGateway, type GatewayProcess } from "../fixtures/gateway.ts";

let gw: GatewayProcess;
let client: OpenAI;
beforeAll(async () => ({ gw, client } = await openaiGateway({ aliases: [{ alias: "qwen3-4b", seed: 1 }, { alias: "qwen3-8b", seed: 2, endOfTurn: "sometimes" }] })));
afterAll(() => gw.stop());

const messages = [{ role: "user" as const, content: "Say something." }];

describe("§2.2 Chat completion response (non-stream 200)", () => {
  it("has the standard shape, echoes the request model, and carries usage and svc_receipt", async () => {
    const { data, response } = await client.chat.completions
      .create({ model: "svc-test/tiny-qwen3-4b-gguf", messages, max_tokens: 16 })
      .withResponse();
    expect(data.id).toMatch(/^chatcmpl-/);
    expect(data.object).toBe("chat.completion");
    expect(Number.isInteger(data.created)).toBe(true);
    expect(data.model).toBe("svc-test/tiny-qwen3-4b-gguf");
    expect(data.choices).toHaveLength(1);
    const [choice] = data.choices;
    expect(choice?.index).toBe(0);
    expect(choice?.message.role).toBe("assistant");
    expect(choice?.message.content).toHaveLength(16); // one printable byte per token on the tiny model
    expect(choice?.finish_reason).toBe("length");
    expect(data.usage?.completion_tokens).toBe(16);
    expect(Number.isInteger(data.usage?.prompt_tokens)).toBe(true);
    expect(data.usage?.total_tokens).toBe((data.usage?.prompt_tokens ?? 0) + 16);
    const receipt = (data as unknown as { svc_receipt: unknown }).svc_receipt;
    expect(receipt).toMatchObject({ trust_level: "process", model_id: "qwen3-4b", provider_id: gw.providerId });
    // the SDK hands back the receipt as sent: it still verifies against the content the SDK parsed
    const verdict = verifyReceipt(receipt, { providerId: gw.providerId, content: choice?.message.content ?? "", usage: data.usage, finishReason: choice?.finish_reason });
    expect(verdict.problems).toEqual([]);
    expect(response.headers.get("x-svc-trust")).toBe("process");
    expect(response.headers.get("x-svc-model")).toBe("qwen3-4b");
    expect(response.headers.get("x-svc-provider")).toBe(gw.providerId);
    expect(response.headers.get("x-request-id")).toMatch(/^req_[0-9a-f]{24}$/);
  });

  it("finish_reason is stop when the model ends its turn", async () => {
    const data = await client.chat.completions.create({ model: "qwen3-8b", messages, max_tokens: 400 });
    expect(data.choices[0]?.finish_reason).toBe("stop");
    expect(data.usage?.completion_tokens).toBeLessThan(400);
  });
});

describe("§2.3 Stream chunk", () => {
  it("for await yields chat.completion.chunk objects; the last carries usage, svc_receipt and x_svc_* fields", async () => {
    const stream = await client.chat.completions.create({ model: "qwen3-4b", messages, max_tokens: 12, stream: true });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.every((c) => c.object === "chat.completion.chunk")).toBe(true);
    expect(chunks[0]?.choices[0]?.delta.role).toBe("assistant");
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
    expect(text).toHaveLength(12);
    const last = chunks.at(-1) as unknown as Record<string, unknown> & { choices: { finish_reason: string }[] };
    expect(last.choices[0]?.finish_reason).toBe("length");
    expect(last.usage).toMatchObject({ completion_tokens: 12 });
    expect(last.svc_receipt).toMatchObject({ trust_level: "process", model_id: "qwen3-4b" });
    expect(verifyReceipt(last.svc_receipt, { providerId: gw.providerId, content: text, usage: last.usage }).problems).toEqual([]);
    expect(chunks.slice(0, -1).some((c) => "svc_receipt" in c)).toBe(false);
    expect([last.x_svc_trust, last.x_svc_model, last.x_svc_provider]).toEqual(["process", "qwen3-4b", gw.providerId]);
  });
});

describe("§7 Errors through the SDK", () => {
  it("400 → BadRequestError with the envelope's code, param and svc_action", async () => {
    const err = await client.chat.completions.create({ model: "qwen3-4b", messages, max_tokens: 1.5 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const e = err as InstanceType<typeof OpenAI.BadRequestError>;
    expect(e.status).toBe(400);
    expect(e.code).toBe("invalid_type");
    expect(e.param).toBe("max_tokens");
    expect((e.error as { svc_action: string }).svc_action).toBe("fix_request");
  });

  it("404 model_not_found → NotFoundError with pick_model", async () => {
    const err = await client.chat.completions.create({ model: "gpt-4o", messages }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as InstanceType<typeof OpenAI.NotFoundError>).code).toBe("model_not_found");
    expect(((err as InstanceType<typeof OpenAI.NotFoundError>).error as { svc_action: string }).svc_action).toBe("pick_model");
  });

  it("401 → AuthenticationError", async () => {
    const wrong = new OpenAI({ baseURL: gw.baseURL, apiKey: "sk-svc_not-a-key", maxRetries: 0 });
    const err = await wrong.models.list().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((err as InstanceType<typeof OpenAI.AuthenticationError>).status).toBe(401);
  });

  it("503 provider_unavailable for a pin to a machine that is not online", async () => {
    const body = { model: "qwen3-4b", messages, provider: "f".repeat(64) } as Parameters<typeof client.chat.completions.create>[0];
    const err = await client.chat.completions.create(body).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect((err as InstanceType<typeof OpenAI.InternalServerError>).status).toBe(503);
    expect((err as InstanceType<typeof OpenAI.InternalServerError>).code).toBe("provider_unavailable");
  });
});

describe("§4.2 GET /v1/models through the SDK", () => {
  it("lists the aliases the live providers serve", async () => {
    const page = await client.models.list();
    expect(page.data.map((m) => m.id)).toEqual(["qwen3-4b", "qwen3-8b"]);
    expect(page.data[0]).toEqual({ id: "qwen3-4b", object: "model", created: CATALOG_EPOCH, owned_by: "svc", svc_kind: "chat" });
    expect(await client.models.retrieve("qwen3-8b")).toMatchObject({ id: "qwen3-8b", object: "model" });
  });
});
