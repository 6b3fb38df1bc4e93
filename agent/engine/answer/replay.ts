// A provider's answer tokens replayed through the agent's answer path (AUDIT-DESIGN §1 item 2): the answer record
// they make, as runTurn made it. Its hashes against the receipt's show that the tokens an audit scores are the tokens
// that made the answer the provider signed, not ids chosen to score well beside a text made otherwise.
import type { LlamaModel, Token } from "node-llama-cpp";
import { AnswerRecord } from "../../../src/receipt/answer-record.ts";
import type { FinishReason } from "../../../src/receipt/receipt.ts";
import type { Turn } from "../turn.ts";
import { AnswerPath } from "./answer-path.ts";

export interface Replayed {
  record: AnswerRecord;
  /** Tokens the answer path read before the answer was complete: fewer than given when tokens follow its end. */
  used: number;
}

/**
 * Replays `tokens` for `turn`. `finish` is the receipt's finish_reason; `callIds` the ids the relayed answer gave its
 * tool calls, in order (an agent draws them at random, so no token makes them).
 */
export function replayAnswer(model: LlamaModel, turn: Turn, tokens: readonly number[], finish: FinishReason, callIds: readonly string[] = []): Replayed {
  let next = 0;
  const path = new AnswerPath(model, turn, { newId: () => callIds[next++] ?? `call_unrelayed_${next}` });
  const record = new AnswerRecord();
  let used = 0;
  for (const token of tokens) {
    used++;
    const { pieces, complete } = path.push(token as Token);
    for (const piece of pieces) record.add(piece);
    if (complete) break;
  }
  for (const piece of path.end(finish === "length" ? "length" : "stop").pieces) record.add(piece);
  return { record, used };
}
