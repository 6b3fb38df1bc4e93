// The answer pipeline (agent/engine/answer/answer-stream.ts) as a unit: decoded text in, content, reasoning and OpenAI tool-call
// pieces out, whatever the split of the text into pieces. Stop cuts first, then the think block, then calls.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AnswerStream, type AnswerOptions } from "../../../../../agent/engine/answer/answer-stream.ts";
import { AnswerRecord, type AnswerPiece } from "../../../../../src/receipt/answer-record.ts";

const ids = () => {
  let n = 0;
  return () => `call_${n++}`;
};

/** Feeds `pieces` one by one and assembles what comes out as the gateway would. */
function run(pieces: readonly string[], options: AnswerOptions) {
  const stream = new AnswerStream({ newId: ids(), ...options });
  const events: AnswerPiece[] = [];
  for (const piece of pieces) {
    events.push(...stream.push(piece));
    if (stream.stopped) break;
  }
  events.push(...stream.end());
  const answer = new AnswerRecord();
  for (const event of events) answer.add(event);
  return { stream, events, answer: { content: answer.content, reasoning: answer.reasoning, toolCalls: answer.toolCalls } };
}

const THINK_AND_CALL = '<think>\nI should look.\n</think>\n\nLet me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';

describe("the answer pipeline", () => {
  it("plain: content as written, nothing held back at the end", () => {
    expect(run(["Hel", "lo"], {}).answer).toEqual({ content: "Hello", reasoning: null, toolCalls: [] });
  });

  it("reasoning parsed and tools: the think block apart, text before the call as content, the call parsed", () => {
    const { answer, stream } = run([THINK_AND_CALL], { parsedReasoning: true, tools: true });
    expect(answer).toEqual({
      content: "Let me check.",
      reasoning: "I should look.",
      toolCalls: [{ id: "call_0", type: "function", function: { name: "get_weather", arguments: '{"city": "Paris"}' } }],
    });
    expect([stream.started, stream.completed, stream.hadReasoning]).toEqual([1, 1, true]);
  });

  it("reasoning inline (the default) with tools: the think block stays in content", () => {
    expect(run([THINK_AND_CALL], { tools: true }).answer.content).toBe("<think>\nI should look.\n</think>\n\nLet me check.");
  });

  it("without tools the markup is content, byte for byte", () => {
    expect(run([THINK_AND_CALL], {}).answer.content).toBe(THINK_AND_CALL);
  });

  it("a stop cuts the raw text before the think split and the call parser see it", () => {
    const { answer, stream } = run([THINK_AND_CALL], { parsedReasoning: true, tools: true, stop: ["Let me"] });
    expect(stream.stopped).toBe(true);
    expect(answer).toEqual({ content: "", reasoning: "I should look.", toolCalls: [] });
  });

  it("inReasoning and insideCall follow the text", () => {
    const stream = new AnswerStream({ parsedReasoning: true, tools: true, newId: ids() });
    stream.push("<think>\nhm");
    expect([stream.inReasoning, stream.insideCall]).toEqual([true, false]);
    stream.push("\n</think>\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\":");
    expect([stream.inReasoning, stream.insideCall]).toEqual([false, true]);
    stream.push(" 1}}\n</tool_call>");
    expect(stream.insideCall).toBe(false);
  });

  it("a call cut short by the budget keeps what was written: its start and argument pieces", () => {
    const { answer, stream } = run(['<tool_call>\n{"name": "f", "arguments": {"a": "par'], { tools: true });
    expect(answer.toolCalls).toEqual([{ id: "call_0", type: "function", function: { name: "f", arguments: '{"a": "par' } }]);
    expect([stream.started, stream.completed]).toEqual([1, 0]);
  });

  it("any split of the text into pieces gives the same answer as the whole text", () => {
    const whole = run([THINK_AND_CALL], { parsedReasoning: true, tools: true }).answer;
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: THINK_AND_CALL.length - 1 }), { maxLength: 12 }), (cuts) => {
        const points = [...new Set(cuts)].sort((a, b) => a - b);
        const pieces = [0, ...points].map((start, i) => THINK_AND_CALL.slice(start, points[i] ?? THINK_AND_CALL.length));
        expect(run(pieces, { parsedReasoning: true, tools: true }).answer).toEqual(whole);
      }),
      { numRuns: 200 },
    );
  });
});

describe("the answer as both ends assemble it (src/receipt/answer-record.ts)", () => {
  it("content is null for a turn that only calls tools, a string otherwise", () => {
    const record = new AnswerRecord();
    record.add({ type: "tool_call", index: 0, id: "c", name: "f" });
    expect(record.messageContent).toBeNull();
    record.add({ type: "delta", text: "x" });
    expect(record.messageContent).toBe("x");
    expect(new AnswerRecord().messageContent).toBe("");
  });

  it("calls out of order, or arguments for a call not begun, are refused", () => {
    expect(() => new AnswerRecord().add({ type: "tool_call", index: 1, id: "c", name: "f" })).toThrow(/out of order/);
    expect(() => new AnswerRecord().add({ type: "tool_args", index: 0, text: "{}" })).toThrow(/not begun/);
  });
});
