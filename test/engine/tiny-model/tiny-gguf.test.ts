// The tiny test model (issue: foundation): a valid GGUF v3 of the qwen3 architecture that llama.cpp loads.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { getLlama, readGgufFileInfo, resolveChatWrapper, type Llama } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTinyModel, byteToUnicode, TINY_SPECIAL_TOKENS, writeTinyModel } from "../../../tiny-model/gguf.ts";
import { tempDir } from "../../fixtures/tiny-catalog.ts";

describe("tiny qwen3 GGUF generator", () => {
  let llama: Llama;
  const dir = tempDir();
  const file = writeTinyModel(join(dir, "tiny.gguf"), { seed: 7 });

  beforeAll(async () => {
    llama = await getLlama({ gpu: false });
  });
  afterAll(async () => {
    await llama.dispose();
  });

  it("is deterministic for a seed and differs between seeds", () => {
    expect(buildTinyModel({ seed: 7 }).equals(readFileSync(file.path))).toBe(true);
    expect(buildTinyModel({ seed: 8 }).equals(readFileSync(file.path))).toBe(false);
  });

  it("is a few MB at most", () => {
    expect(file.sizeBytes).toBeLessThan(4 * 1024 * 1024);
  });

  it("is GGUF v3 with qwen3 metadata, typed as llama.cpp requires", async () => {
    const bytes = readFileSync(file.path);
    expect(bytes.subarray(0, 4).toString("ascii")).toBe("GGUF");
    expect(bytes.readUInt32LE(4)).toBe(3);
    const info = await readGgufFileInfo(file.path);
    const meta = info.metadata as any; // any: architecture-specific keys are not in the generic type
    expect(meta.general.architecture).toBe("qwen3");
    expect(meta.qwen3.embedding_length).toBeLessThanOrEqual(128);
    expect(meta.qwen3.attention.key_length).toBe(meta.qwen3.rope.dimension_count);
    const tokens: string[] = meta.tokenizer.ggml.tokens;
    expect(tokens.slice(0, 256)).toEqual(byteToUnicode());
    expect(tokens.slice(256)).toEqual([...TINY_SPECIAL_TOKENS]);
    const types: number[] = meta.tokenizer.ggml.token_type;
    expect(types.slice(256)).toEqual([3, 3, 3, 4, 4]); // <|…|> CONTROL, <think> tags USER_DEFINED
    expect(meta.tokenizer.chat_template).toContain("<think>");
    for (const t of info.fullTensorInfo ?? []) expect(Number(t.offset) % 32).toBe(0);
  });

  it("loads in node-llama-cpp, which resolves its Qwen chat wrapper", async () => {
    const model = await llama.loadModel({ modelPath: file.path });
    try {
      expect(resolveChatWrapper(model).wrapperName).toBe("Qwen");
      const think = model.tokenize("<think>");
      expect(think).toHaveLength(1);
      expect(model.detokenize(model.tokenize("héllo wörld"))).toBe("héllo wörld");
      expect(model.isEogToken(model.tokenize("<|im_end|>", true)[0])).toBe(true);
    } finally {
      await model.dispose();
    }
  });

  it("padded to a real model's vocabulary (the bench's logprobs cost): that many tokens, the pads control tokens greedy decoding never picks", async () => {
    const padded = writeTinyModel(join(dir, "padded.gguf"), { seed: 7, vocabularySize: 4096 });
    const tokens: string[] = ((await readGgufFileInfo(padded.path)).metadata as any).tokenizer.ggml.tokens; // any: as above
    expect([tokens.length, tokens[4095]]).toEqual([4096, `<|svc_pad_${4096 - 256 - TINY_SPECIAL_TOKENS.length - 1}|>`]);
    const model = await llama.loadModel({ modelPath: padded.path });
    try {
      const context = await model.createContext({ contextSize: 256, threads: 1 });
      const out = [];
      for await (const token of context.getSequence().evaluate(model.tokenize("The keeper"), { temperature: 0 })) if (out.push(token) >= 24) break;
      expect(out.every((token) => token < 256 + TINY_SPECIAL_TOKENS.length)).toBe(true);
      await context.dispose();
    } finally {
      await model.dispose();
    }
  });
});
