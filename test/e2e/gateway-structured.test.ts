// Structured output end to end: the official `openai` SDK against a real `svc-gateway serve` and a real agent on the
// tiny model. The schema travels sealed to the agent, its grammar shapes the random weights' output, and the receipt
// covers exactly the normalised JSON returned. Mechanics only, never what the text says.
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { validate } from "../../src/schema/validate.ts";
import { verifyReceipt } from "../../src/receipt/receipt.ts";
import { openaiGateway, type GatewayProcess } from "../fixtures/gateway.ts";

let gw: GatewayProcess;
let client: OpenAI;
beforeAll(async () => ({ gw, client } = await openaiGateway({ aliases: [{ alias: "qwen3-4b", seed: 1 }] })));
afterAll(() => gw.stop());

const messages = [{ role: "user" as const, content: "Describe a person as JSON." }];
// what a zod schema through the Vercel AI SDK looks like: $schema and descriptions included
const PERSON = {
  $schema: "http://json-schema.org/draft-07/schema#",
  type: "object",
  properties: {
    name: { type: "string", maxLength: 10, description: "given name" },
    age: { type: "integer" },
    pets: { type: "array", items: { type: "string", maxLength: 5 }, maxItems: 2 },
    role: { enum: ["admin", "user"] },
  },
  required: ["name", "age", "pets", "role"],
  additionalProperties: false,
};
const responseFormat = { type: "json_schema" as const, json_schema: { name: "person", schema: PERSON, strict: true } };

describe("response_format through the SDK", () => {
  it("json_schema: the content parses and validates, and the receipt verifies against it", async () => {
    let stops = 0;
    for (const seed of [1, 2, 3]) {
      const data = await client.chat.completions.create({ model: "qwen3-4b", messages, max_tokens: 200, temperature: 1, seed, response_format: responseFormat });
      const [choice] = data.choices;
      const content = choice?.message.content ?? "";
      const receipt = (data as unknown as { svc_receipt: unknown }).svc_receipt;
      expect(verifyReceipt(receipt, { providerId: gw.providerId, content, usage: data.usage, finishReason: choice?.finish_reason }).problems).toEqual([]);
      if (choice?.finish_reason !== "stop") continue;
      stops++;
      expect(validate(JSON.parse(content), PERSON), content).toEqual([]);
    }
    expect(stops).toBeGreaterThanOrEqual(2);
  });

  it("streamed: the chunks join to JSON that validates, covered by the receipt", async () => {
    const stream = await client.chat.completions.create({ model: "qwen3-4b", messages, max_tokens: 200, temperature: 1, seed: 4, stream: true, response_format: { type: "json_object" } });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
    const last = chunks.at(-1) as unknown as { choices: { finish_reason: string }[]; usage: unknown; svc_receipt: unknown };
    expect(verifyReceipt(last.svc_receipt, { providerId: gw.providerId, content: text, usage: last.usage }).problems).toEqual([]);
    if (last.choices[0]?.finish_reason === "stop") expect(JSON.parse(text)).toBeTypeOf("object");
  });

  it("strict with a keyword the grammar cannot enforce: BadRequestError naming the keyword's path", async () => {
    const schema = { ...PERSON, properties: { ...PERSON.properties, site: { type: "string", format: "uri" } } };
    const err = await client.chat.completions
      .create({ model: "qwen3-4b", messages, response_format: { type: "json_schema", json_schema: { name: "p", schema, strict: true } } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const e = err as InstanceType<typeof OpenAI.BadRequestError>;
    expect([e.status, e.code, e.param]).toEqual([400, "invalid_value", "response_format.json_schema.schema.properties.site.format"]);
  });
});
