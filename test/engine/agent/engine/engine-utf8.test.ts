// Grammar-bound answers stay valid UTF-8 on real llama.cpp with the tiny qwen3 model, whose byte tokens the random
// weights sometimes pick out of order: llama.cpp's grammar would pass some invalid runs as one character of a string
// (agent/engine/utf8-guard.ts), and the answer would read each of their bytes as U+FFFD, past maxLength.
import { afterAll, describe, expect, it } from "vitest";
import { Engine } from "../../../../agent/engine/engine.ts";
import { ModelStore } from "../../../../agent/models/store.ts";
import { validate } from "../../../../src/schema/validate.ts";
import type { FunctionTool } from "../../../../src/session/tools.ts";
import { askEngine, collect } from "../../../fixtures/engine-request.ts";
import { makeTinyCatalog } from "../../../fixtures/tiny-catalog.ts";

const tiny = makeTinyCatalog([{ alias: "qwen3-4b", seed: 1 }]);
const engine = new Engine({ store: new ModelStore({ catalog: tiny.catalog, modelsDir: tiny.modelsDir }), gpu: false, threads: 1 });
afterAll(async () => {
  await engine.dispose();
  tiny.cleanup();
});

const short = { type: "string", maxLength: 3 };
const SCHEMA = {
  type: "object",
  properties: { a: short, b: short, c: short, d: short, list: { type: "array", items: short, maxItems: 4 } },
  required: ["a", "b", "c", "d", "list"],
  additionalProperties: false,
};
const SEEDS = 40;
const json_schema = { name: "t", schema: SCHEMA, strict: true };
const tools: FunctionTool[] = [{ type: "function", function: { name: "put", parameters: SCHEMA, strict: true } }];

/** Each seed's JSON text that holds U+FFFD or breaks the schema. */
async function broken(text: (seed: number) => Promise<string>): Promise<string[]> {
  const out: string[] = [];
  for (let seed = 1; seed <= SEEDS; seed++) {
    const json = await text(seed);
    if (json.includes("\uFFFD") || validate(JSON.parse(json), SCHEMA).length > 0) out.push(`seed ${seed}: ${json}`);
  }
  return out;
}

describe("strings within maxLength, as valid UTF-8, at temperature 2", () => {
  it(`response_format json_schema: ${SEEDS} seeds, every answer validates and holds no U+FFFD`, async () => {
    const texts = async (seed: number) => {
      const { text, done } = await collect(engine.generate(askEngine({ seed, temperature: 2, max_tokens: 400, response_format: { type: "json_schema", json_schema } })));
      expect(done.finish_reason, `seed ${seed}: ${text}`).toBe("stop");
      return text;
    };
    expect(await broken(texts)).toEqual([]);
  });

  it(`a forced tool call's arguments: ${SEEDS} seeds, every call validates and holds no U+FFFD`, async () => {
    const args = async (seed: number) => {
      const { answer, done } = await collect(engine.generate(askEngine({ seed, temperature: 2, max_tokens: 400, tools, tool_choice: "required", parallel_tool_calls: false })));
      expect(done.finish_reason, `seed ${seed}`).toBe("tool_calls");
      return answer.toolCalls[0]!.function.arguments;
    };
    expect(await broken(args)).toEqual([]);
  });
});
