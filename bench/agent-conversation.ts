// Bench section 7's conversation (issue 30): an agent's turns, each resending the whole history plus a tool call, its
// result and a user message (about 880 tokens on the tiny model's byte-level tokenizer), deterministic per caller.
import { DEFAULT_CONTEXT_SIZE } from "../agent/engine/context-size.ts";

export const ANSWER_TOKENS = 8;
/**
 * Lines of about 70 tokens (the tiny model's tokenizer is byte-level: a token a character): with the call's
 * markup, about 880 tokens a turn, so turn 8 (about 7,950 with the tool definitions) still fits the engine's
 * 8,192-token context.
 */
const TOOL_LINES = 8;
const USER_LINES = 2;

type Message = Record<string, unknown>;

/** Deterministic text that differs per caller, turn and line, so no two callers or turns share more than markup. */
const line = (caller: number, turn: number, i: number) =>
  `Reading ${turn}.${i} for caller ${caller}: gauge ${(caller * 7919 + turn * 104729 + i * 31) % 997} shows ${(i * 13 + turn) % 89} units, logged at ${10 + (i % 12)}:${String((i * 7) % 60).padStart(2, "0")}.`;
const block = (caller: number, turn: number, lines: number, offset = 0) =>
  Array.from({ length: lines }, (_, i) => line(caller, turn, i + offset)).join("\n");

export const TOOLS = [
  {
    type: "function",
    function: {
      name: "read_gauges",
      description: "Reads the station's gauges for a time window and returns one line per reading.",
      parameters: { type: "object", properties: { station: { type: "string" }, window_minutes: { type: "integer" } }, required: ["station"] },
    },
  },
];

/** What a conversation opens with: its system prompt's length, and the context the agent and the anchor give it. */
export interface Shape {
  /** Lines of an operating manual in the system prompt, about 75 tokens each. */
  manualLines: number;
  /** `--context-size` for the agent and the anchor's context. */
  contextSize: number;
}

/** Section 7's conversation: a short system prompt, turn 1 about 1,760 tokens, turn 8 about 7,950. */
export const SHORT: Shape = { manualLines: 0, contextSize: DEFAULT_CONTEXT_SIZE };
/**
 * A coding agent's opening: about 6,000 tokens more of system prompt (coding agents' instructions and tool
 * definitions run to 10,000 and more), turn 1 about 7,700 tokens, turn 8 about 13,900.
 */
export const LONG_PREFIX: Shape = { manualLines: 80, contextSize: 16_384 };

const manual = (caller: number, lines: number) =>
  Array.from({ length: lines }, (_, i) => `Manual rule ${i + 1} for caller ${caller}: check gauge ${(i * 37 + caller) % 997} before valve ${(i * 11) % 89}, then log it.`).join("\n");

/** The messages a caller sends on turn `turn` (1-based): the history so far, then this turn's call, result and question. */
export function conversation(caller: number, turn: number, shape: Shape = SHORT): Message[] {
  const rules = shape.manualLines > 0 ? `\n${manual(caller, shape.manualLines)}` : "";
  const messages: Message[] = [
    { role: "system", content: `You are a station assistant for caller ${caller}. Use read_gauges to read the gauges before you answer.${rules}` },
    { role: "user", content: `Start of shift.\n${block(caller, 0, 1)}` },
  ];
  for (let t = 1; t <= turn; t++) {
    const id = `call_${caller}_${t}`;
    messages.push({ role: "assistant", content: null, tool_calls: [{ id, type: "function", function: { name: "read_gauges", arguments: JSON.stringify({ station: `st-${caller}`, window_minutes: 10 * t }) } }] });
    messages.push({ role: "tool", tool_call_id: id, content: block(caller, t, TOOL_LINES) });
    messages.push({ role: "user", content: `Turn ${t}: what changed?\n${block(caller, t, USER_LINES, TOOL_LINES)}` });
  }
  return messages;
}

