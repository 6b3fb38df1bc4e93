// The auditor's reference (issue 43 item 2): the request's prompt, rendered exactly as the agent renders it, and the
// provider's answer tokens go through the auditor's own copy of the pinned GGUF once (teacher forcing), and each answer
// position's distribution is read: the softmax of the raw logits, as the provider's logprobs are defined
// (logprobs.ts). controlledEvaluate with `probabilities` and no sampler settings returns exactly that (its greedy
// chain leaves every candidate's logit in place). Positions are read in fixed chunks, each distribution reduced at
// once: a real vocabulary's is ~10 MB, and a fixed chunking keeps the pass deterministic.
import { resolveChatWrapper, type LlamaContextSequence, type LlamaModel, type Token } from "node-llama-cpp";
import { referencePosition, type ReferencePosition } from "../../src/audit/position.ts";
import { MAX_TOP_LOGPROBS } from "../../src/receipt/logprobs.ts";
import { renderTurnPrompt } from "./prompt.ts";
import { planTurn, type GenerateRequest } from "./turn.ts";

export interface RescoreSettings {
  /** llama.cpp CPU threads and batch size of the reference pass (recorded with an audit's evidence). */
  threads: number;
  batchSize: number;
}

export interface Rescored {
  /** The prompt's length as rendered here: an audit compares it with the receipt's prompt_tokens. */
  promptTokens: number;
  positions: ReferencePosition[];
}

/** Answer positions read per controlledEvaluate call. */
const CHUNK = 16;
const ROUND = 256;

type Input = Parameters<LlamaContextSequence["controlledEvaluate"]>[0];

/** Re-scores `answer` (the provider's token ids) after the request's prompt, on `model` (the auditor's pinned GGUF). */
export async function rescore(model: LlamaModel, request: GenerateRequest, answer: readonly number[], settings: RescoreSettings): Promise<Rescored> {
  const prompt = renderTurnPrompt(model, resolveChatWrapper(model), request.model, planTurn(request));
  if (answer.length === 0) return { promptTokens: prompt.length, positions: [] };
  // the ids are the provider's: llama.cpp must never see one outside the vocabulary, nor a context past the model's
  const vocabulary = model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length ?? 0;
  const outside = answer.findIndex((id) => !Number.isInteger(id) || id < 0 || id >= vocabulary);
  if (outside !== -1) throw new Error(`answer token ${outside} is id ${answer[outside]}, outside the model's vocabulary of ${vocabulary}`);
  if (prompt.length + answer.length > model.trainContextSize) {
    throw new Error(`the prompt's ${prompt.length} tokens and the answer's ${answer.length} are more than the model's context of ${model.trainContextSize}`);
  }
  // the last prompt token's distribution scores answer token 1, answer token t's scores token t + 1
  const input = [...prompt, ...answer.slice(0, -1)] as Token[];
  const first = prompt.length - 1;
  const contextSize = Math.min(model.trainContextSize, Math.ceil((input.length + 1) / ROUND) * ROUND);
  const context = await model.createContext({ contextSize, threads: settings.threads, batchSize: settings.batchSize, sequences: 1 });
  try {
    const sequence = context.getSequence();
    const positions: ReferencePosition[] = [];
    const flag = (token: Token) => [token, { generateNext: { probabilities: true } }] as const;
    for (let start = first; start < input.length; start += CHUNK) {
      // the first call also carries the prompt before its last token, unread
      const head = start === first ? input.slice(0, first) : [];
      const flagged = input.slice(start, start + CHUNK);
      const out = await sequence.controlledEvaluate([...head, ...flagged.map(flag)] as Input);
      flagged.forEach((_, i) => {
        const t = start - first + i;
        const probabilities = out[head.length + i]?.next?.probabilities;
        if (probabilities === undefined) throw new Error(`the reference pass returned no distribution at answer position ${t}`);
        positions.push(referencePosition(probabilities, answer[t]!, MAX_TOP_LOGPROBS));
      });
    }
    return { promptTokens: prompt.length, positions };
  } finally {
    await context.dispose();
  }
}
