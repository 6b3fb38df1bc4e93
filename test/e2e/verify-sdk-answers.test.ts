// RECEIPTS.md "Fields outside the receipt", end to end: answers a real gateway and agent (tiny model) served, saved
// as the SDKs hand them back, verify VALID in `svc-agent verify`, because each field an SDK adds is derivable from
// what the receipt covers (the unit tests in test/unit/src/receipt/saved-mutations.test.ts hold everything else an
// SDK might add to INVALID).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { zodFunction, zodResponseFormat, zodTextFormat } from "openai/helpers/zod";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { runCli } from "../../harness/cli.ts";
import { pythonModelDumpJson, pythonParseToJson } from "../fixtures/openai-python.ts";
import { openaiGateway, post, type GatewayProcess } from "../fixtures/gateway.ts";

let gw: GatewayProcess;
let client: OpenAI;
const dir = mkdtempSync(join(tmpdir(), "svc-sdk-saved-"));
beforeAll(async () => ({ gw, client } = await openaiGateway({ aliases: [{ alias: "qwen3-4b", seed: 1 }] })));
afterAll(async () => {
  await gw?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const City = z.object({ city: z.string().max(12) });
const messages = [{ role: "user" as const, content: "A city." }];
// the grammar forces the JSON and the calls, so the tiny model's answers have the shapes asked for
// seeded, and room enough that the tiny model's JSON ends before max_tokens (the SDK refuses to parse a cut answer)
const json = { max_tokens: 200, temperature: 1, seed: 3, response_format: zodResponseFormat(City, "city") };
const weather = { max_tokens: 200, temperature: 1, seed: 1, tools: [zodFunction({ name: "get_weather", parameters: City })], tool_choice: "required" as const };
const strictTool = { type: "function" as const, name: "get_weather", parameters: { type: "object", properties: { city: { type: "string", maxLength: 12 } }, required: ["city"], additionalProperties: false }, strict: true };

/** Saves `text` as a caller would, and returns its path. */
function save(name: string, text: string | Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** `svc-agent verify FILE --providers {gateway}`: the exit code and the verdict line. */
async function verify(path: string): Promise<[number | null, string | undefined]> {
  const result = await runCli("svc-agent", ["verify", path, "--providers", gw.url], { SVC_API_KEY: gw.key });
  return [result.code, result.stdout.trimEnd().split("\n").at(-1)];
}
const VALID = expect.stringMatching(/^VALID: receipt rcpt_[0-9a-f]{24} signed by provider [0-9a-f]{64} at rung process for qwen3-4b$/);

describe("openai-node, saved with JSON.stringify as it hands the answer back", () => {
  it("chat.completions.stream().finalChatCompletion(): refusal and logprobs null and the stop chunk's x_svc_* added, VALID", async () => {
    const answers = {
      text: await client.chat.completions.stream({ model: "qwen3-4b", messages, max_tokens: 8 }).finalChatCompletion(),
      json: await client.chat.completions.stream({ model: "qwen3-4b", messages, ...json }).finalChatCompletion(),
      tools: await client.chat.completions.stream({ model: "qwen3-4b", messages, ...weather }).finalChatCompletion(),
    };
    const text = answers.text as unknown as { choices: [{ logprobs: unknown; message: { refusal: unknown } }]; x_svc_provider: string };
    expect([text.choices[0].message.refusal, text.choices[0].logprobs, text.x_svc_provider]).toEqual([null, null, gw.providerId]);
    expect(answers.json.choices[0]!.message.parsed).toEqual({ city: expect.any(String) });
    expect(answers.tools.choices[0]!.message.tool_calls?.[0]?.function.parsed_arguments).toEqual({ city: expect.any(String) });
    for (const [name, answer] of Object.entries(answers)) expect([name, ...(await verify(save(`final-${name}.json`, JSON.stringify(answer))))]).toEqual([name, 0, VALID]);
  });

  it("responses.parse() and responses.stream().finalResponse(): parsed, parsed_arguments and output_parsed added, VALID", async () => {
    const format = { text: { format: zodTextFormat(City, "city") }, max_output_tokens: 200, temperature: 1, seed: 3 };
    const answers = {
      json: await client.responses.parse({ model: "qwen3-4b", input: "A city.", ...format }),
      // one call, so it ends within max_output_tokens (the SDK parses a completed answer only)
      tools: await client.responses.parse({ model: "qwen3-4b", input: "Weather in Paris?", tools: [strictTool], tool_choice: "required", parallel_tool_calls: false, max_output_tokens: 200, temperature: 1, seed: 1 } as never),
      streamed: await client.responses.stream({ model: "qwen3-4b", input: "A city.", max_output_tokens: 8 }).finalResponse(),
      streamedJson: await client.responses.stream({ model: "qwen3-4b", input: "A city.", ...format }).finalResponse(),
    };
    expect([answers.json.output_parsed, answers.streamedJson.output_parsed]).toEqual([{ city: expect.any(String) }, { city: expect.any(String) }]);
    expect([answers.tools.status, answers.tools.output.find((item) => item.type === "function_call")]).toMatchObject(["completed", { parsed_arguments: { city: expect.any(String) } }]);
    expect(answers.streamed.output.find((item) => item.type === "message")).toMatchObject({ content: [{ parsed: null }] });
    for (const [name, answer] of Object.entries(answers)) expect([name, ...(await verify(save(`responses-${name}.json`, JSON.stringify(answer))))]).toEqual([name, 0, VALID]);
  });
});

describe("openai-python (built from its source: openai-python is not installable here, no PyPI; test/fixtures/openai-python.ts)", () => {
  it("model_dump_json() writes every field of its models, null where svc has nothing; parse().to_json() adds parsed and tool_calls null: VALID", async () => {
    const body = async (extra: Record<string, unknown>) => (await (await post(gw, "/v1/chat/completions", { model: "qwen3-4b", messages, ...extra })).json()) as Record<string, unknown>;
    const tools = { max_tokens: 200, temperature: 1, seed: 1, tools: [{ type: "function", function: { name: "get_weather", parameters: strictTool.parameters } }], tool_choice: "required" };
    const structured = await body({ max_tokens: 200, temperature: 1, seed: 3, response_format: { type: "json_schema", json_schema: { name: "city", schema: strictTool.parameters, strict: true } } });
    const content = (structured.choices as [{ message: { content: string } }])[0].message.content;
    const files = {
      "model_dump_json, text": pythonModelDumpJson(await body({ max_tokens: 8 })),
      "model_dump_json, tool calls": pythonModelDumpJson(await body(tools)),
      "parse().to_json(), JSON output": pythonParseToJson(structured, JSON.parse(content)),
    };
    expect(JSON.parse(files["model_dump_json, text"])).toMatchObject({ system_fingerprint: null, choices: [{ logprobs: null, message: { refusal: null, tool_calls: null } }] });
    for (const [name, text] of Object.entries(files)) expect([name, ...(await verify(save(`python-${name.replace(/\W+/g, "-")}.json`, text)))]).toEqual([name, 0, VALID]);
  });
});
