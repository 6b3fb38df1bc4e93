// The Responses output items an answer's pieces make (RECEIPTS.md "Responses"), and the events that say them:
// the stream's items are the body's, and a verifier reads back exactly the content, calls and reasoning signed.
import { describe, expect, it } from "vitest";
import { itemsOfAnswer, ResponseLayout } from "../../../../src/openai/responses-layout.ts";
import { AnswerRecord, type AnswerPiece } from "../../../../src/receipt/answer-record.ts";
import { answerOfItems } from "../../../../src/receipt/response-items.ts";

const ids = () => {
  let n = 0;
  return (prefix: string) => `${prefix}_${n++}`;
};
const record = (pieces: AnswerPiece[]) => {
  const answer = new AnswerRecord();
  pieces.forEach((p) => answer.add(p));
  return answer;
};
const CALLS: AnswerPiece[] = [
  { type: "reasoning", text: "hm" },
  { type: "reasoning", text: "m" },
  { type: "delta", text: "Checking." },
  { type: "tool_call", index: 0, id: "call_a", name: "get_weather" },
  { type: "tool_args", index: 0, text: '{"city":' },
  { type: "tool_args", index: 0, text: '"Paris"}' },
  { type: "tool_call", index: 1, id: "call_b", name: "get_time" },
];

describe("Responses: output items", () => {
  it("a whole answer: one reasoning item, one message, one function_call per call, each completed", () => {
    expect(itemsOfAnswer(record(CALLS), "completed", { newId: ids() })).toEqual([
      { type: "reasoning", id: "rs_0", status: "completed", summary: [], content: [{ type: "reasoning_text", text: "hmm" }] },
      { type: "message", id: "msg_1", status: "completed", role: "assistant", content: [{ type: "output_text", text: "Checking.", annotations: [] }] },
      { type: "function_call", id: "fc_2", status: "completed", call_id: "call_a", name: "get_weather", arguments: '{"city":"Paris"}' },
      { type: "function_call", id: "fc_3", status: "completed", call_id: "call_b", name: "get_time", arguments: "" },
    ]);
  });

  it("an answer with no text and no call is one empty message; a cut answer's last item is incomplete", () => {
    expect(itemsOfAnswer(record([]), "completed", { newId: ids() })).toEqual([
      { type: "message", id: "msg_0", status: "completed", role: "assistant", content: [{ type: "output_text", text: "", annotations: [] }] },
    ]);
    const cut = itemsOfAnswer(record([{ type: "reasoning", text: "a" }, { type: "delta", text: "b" }]), "incomplete", { newId: ids() });
    expect(cut.map((item) => item.status)).toEqual(["completed", "incomplete"]);
  });

  it("the stream: numbered events that add, fill and close each item, ending with the body's items", () => {
    const layout = new ResponseLayout({ newId: ids() });
    const events = [...CALLS.flatMap((p) => layout.add(p)), ...layout.finish("completed")];
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events.map((e) => e.type)).toEqual([
      "response.output_item.added", "response.content_part.added", "response.reasoning_text.delta", "response.reasoning_text.delta",
      "response.reasoning_text.done", "response.content_part.done", "response.output_item.done",
      "response.output_item.added", "response.content_part.added", "response.output_text.delta",
      "response.output_text.done", "response.content_part.done", "response.output_item.done",
      "response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
      "response.function_call_arguments.done", "response.output_item.done",
      "response.output_item.added", "response.function_call_arguments.done", "response.output_item.done",
    ]);
    expect(layout.items).toEqual(itemsOfAnswer(record(CALLS), "completed", { newId: ids() }));
    expect(events[13]).toMatchObject({ output_index: 2, item: { type: "function_call", status: "in_progress", arguments: "", call_id: "call_a" } });
    expect(events[16]).toEqual({ type: "response.function_call_arguments.done", sequence_number: 16, item_id: "fc_2", output_index: 2, name: "get_weather", arguments: '{"city":"Paris"}' });
  });

  it("reading the items back gives the answer the receipt covers, and refuses a layout the gateway never makes", () => {
    const items = itemsOfAnswer(record(CALLS), "completed", { newId: ids() });
    const answer = record(CALLS);
    expect(answerOfItems(items, "completed")).toEqual({ content: answer.content, contentLogprobs: undefined, toolCalls: answer.toolCalls, reasoning: answer.reasoning, finishReason: "tool_calls" });
    expect(answerOfItems(itemsOfAnswer(record([]), "completed", { newId: ids() }), "completed")).toEqual({ content: "", contentLogprobs: undefined, toolCalls: [], reasoning: null, finishReason: "stop" });
    const [reasoning, message, call] = items;
    expect(answerOfItems([message!, message!], "completed")).toEqual({ problem: "output[1] is a second message item in a row" });
    expect(answerOfItems([reasoning!], "completed")).toEqual({ problem: "output has no message and no function call" });
    expect(answerOfItems([message!, call!], "incomplete")).toEqual({ problem: "output[1].status is completed, expected incomplete" });
  });
});
