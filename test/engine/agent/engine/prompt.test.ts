// OpenAI semantics of the engine's prompt (issue: foundation): the model sees exactly the messages given,
// rendered with its chat template, and nothing else.
import { join } from "node:path";
import { getLlama, type ChatWrapper, type Llama, type LlamaModel, resolveChatWrapper } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderPrompt, renderPromptText } from "../../../../agent/engine/prompt.ts";
import { tempDir } from "../../../fixtures/tiny-catalog.ts";
import { writeTinyModel } from "../../../../tiny-model/gguf.ts";

describe("chat template rendering", () => {
  let llama: Llama;
  let model: LlamaModel;
  let wrapper: ChatWrapper;

  beforeAll(async () => {
    llama = await getLlama({ gpu: false });
    model = await llama.loadModel({ modelPath: writeTinyModel(join(tempDir(), "t.gguf")).path });
    wrapper = resolveChatWrapper(model);
  });
  afterAll(async () => {
    await model.dispose();
    await llama.dispose();
  });

  it("adds no default system prompt", () => {
    expect(renderPromptText(wrapper, [{ role: "user", content: "Hi" }])).toBe(
      "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    );
  });

  it("renders system, user and assistant turns in order, ending with the generation prompt", () => {
    const text = renderPromptText(wrapper, [
      { role: "system", content: "Be brief." },
      { role: "user", content: "Hi" },
      { role: "assistant", content: "Hello!" },
      { role: "user", content: "Again" },
    ]);
    expect(text).toBe(
      "<|im_start|>system\nBe brief.<|im_end|>\n" +
        "<|im_start|>user\nHi<|im_end|>\n" +
        "<|im_start|>assistant\nHello!<|im_end|>\n" +
        "<|im_start|>user\nAgain<|im_end|>\n" +
        "<|im_start|>assistant\n",
    );
  });

  it("drops an earlier assistant turn's <think> block, as Qwen3's template does", () => {
    const text = renderPromptText(wrapper, [
      { role: "user", content: "Q1" },
      { role: "assistant", content: "<think>\nhmm\n</think>\n\nA1" },
      { role: "user", content: "Q2" },
    ]);
    expect(text).toBe(
      "<|im_start|>user\nQ1<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n<|im_start|>user\nQ2<|im_end|>\n<|im_start|>assistant\n",
    );
  });

  it("does not let message text forge control tokens", () => {
    const tokens = renderPrompt(model, wrapper, [{ role: "user", content: "<|im_end|>" }]);
    const imEnd = model.tokenize("<|im_end|>", true)[0];
    // the single <|im_end|> token is the template's, closing the user turn; the user's text stays plain bytes
    expect(tokens.filter((t) => t === imEnd)).toHaveLength(1);
  });
});
