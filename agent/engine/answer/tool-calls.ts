// Splits generated Qwen3 text into content and OpenAI tool calls, as a stream of answer pieces: content deltas (never
// a byte of `<tool_call>` markup), then per call its index, id and name, then its argument text piece by piece.
import { randomBytes } from "node:crypto";
import { AnswerRecord, type AnswerPiece, type ToolCall } from "../../../src/receipt/answer-record.ts";
import { TOOL_CALL_CLOSE, TOOL_CALL_OPEN } from "../qwen3-markup.ts";

export interface ParsedToolCalls {
  /** Null when the turn is only tool calls, as in OpenAI's `message.content`. */
  content: string | null;
  toolCalls: ToolCall[];
  problems: string[];
}

/** OpenAI-style call ids: "call_" and 24 random alphanumerics. */
export function newCallId(): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  return `call_${[...randomBytes(24)].map((b) => alphabet[b % alphabet.length]).join("")}`;
}

/** Whole-text form: the same parser fed everything at once, its pieces assembled as both ends assemble them. */
export function parseToolCalls(text: string, options: { newId?: () => string } = {}): ParsedToolCalls {
  const stream = new ToolCallStream(options);
  const answer = new AnswerRecord();
  for (const piece of [...stream.push(text), ...stream.end()]) answer.add(piece);
  return { content: answer.messageContent, toolCalls: answer.toolCalls, problems: stream.problems };
}

// The envelope Qwen3 writes (and the tool-call grammar forces) around the arguments, matched one character at a time.
type Step = "ws" | "string" | { literal: string };
const HEAD: Step[] = ["ws", { literal: "{" }, "ws", { literal: '"name"' }, "ws", { literal: ":" }, "ws", "string", "ws", { literal: "," }, "ws", { literal: '"arguments"' }, "ws", { literal: ":" }, "ws"];
const TAIL: Step[] = ["ws", { literal: "}" }, "ws", { literal: TOOL_CALL_CLOSE }];
const isWs = (ch: string) => ch === " " || ch === "\n" || ch === "\t" || ch === "\r";
/** JSON's whitespace only, so that held and trimmed text agree whatever the split. */
const trimEndWs = (text: string) => text.replace(/[ \n\t\r]+$/, "");

/** Matches a Step list; `feed` says whether a character was taken, and `done`/`failed` where it stands. */
class Envelope {
  private step = 0;
  private at = 0; // position inside a literal or string
  private escaped = false;
  captured = "";
  failed = false;
  constructor(private readonly steps: Step[]) {}

  get done(): boolean {
    return this.step === this.steps.length;
  }

  feed(ch: string): boolean {
    while (!this.done) {
      const step = this.steps[this.step]!;
      if (step === "ws") {
        if (isWs(ch)) return true;
        this.step++;
      } else if (step === "string") {
        if (this.at === 0 && ch !== '"') return !(this.failed = true);
        if (this.at > 0 && ch === '"' && !this.escaped) (this.step++, (this.at = 0));
        else if (this.at++ > 0) (this.captured += ch), (this.escaped = !this.escaped && ch === "\\");
        return true;
      } else {
        if (ch !== step.literal[this.at]) return !(this.failed = true);
        if (++this.at === step.literal.length) (this.step++, (this.at = 0));
        return true;
      }
    }
    return false;
  }
}

/** Tracks one JSON value's extent: containers to their closing bracket, strings to their quote, scalars to a delimiter. */
class ValueEnd {
  private depth = 0;
  private inString = false;
  private escaped = false;
  private kind?: "container" | "string" | "scalar";
  done = false;

  /** Whether `ch` belongs to the value (a scalar's delimiter does not). */
  feed(ch: string): boolean {
    if (this.kind === undefined) this.kind = ch === "{" || ch === "[" ? "container" : ch === '"' ? "string" : "scalar";
    if (this.kind === "scalar") return !(this.done = isWs(ch) || ch === "}" || ch === "," || ch === "]");
    if (this.inString) {
      if (this.escaped) this.escaped = false;
      else if (ch === "\\") this.escaped = true;
      else if (ch === '"') (this.inString = false), (this.done = this.kind === "string");
    } else if (ch === '"') this.inString = true;
    else if (ch === "{" || ch === "[") this.depth++;
    else if (ch === "}" || ch === "]") this.done = --this.depth === 0;
    return true;
  }
}

interface OpenCall {
  phase: "head" | "arguments" | "tail" | "skip" | "raw";
  head: Envelope;
  value: ValueEnd;
  tail: Envelope;
  /** Everything after `<tool_call>`, kept while the call might still need the lenient whole-block parse. */
  raw: string;
  index?: number;
  id?: string;
  name?: string;
  args: string;
}

export class ToolCallStream {
  readonly problems: string[] = [];
  /** Calls begun (their `tool_call` piece sent), and calls whose closing tag was read. */
  started = 0;
  completed = 0;
  private held = ""; // content that may still turn out to be markup, or whitespace before a call
  private afterCall = false; // content after a call: its leading whitespace is dropped
  private emitted = false;
  private call?: OpenCall;
  private readonly newId: () => string;

  constructor(options: { newId?: () => string } = {}) {
    this.newId = options.newId ?? newCallId;
  }

  /** True from `<tool_call>` to the end of the arguments: where special tokens must not be sampled (see special-tokens.ts). */
  get insideCall(): boolean {
    return this.call !== undefined && (this.call.phase === "head" || this.call.phase === "arguments" || this.call.phase === "raw");
  }

  push(text: string): AnswerPiece[] {
    const out: AnswerPiece[] = [];
    let rest = text;
    while (rest !== "") rest = this.call ? this.inCall(rest, out) : this.inContent(rest, out);
    return out;
  }

  /** The end of generation: held content comes out; an unfinished call is a problem (its pieces so far were sent). */
  end(): AnswerPiece[] {
    const out: AnswerPiece[] = [];
    if (this.call) this.problems.push(`tool call ${this.call.index ?? this.started} is unfinished: ${JSON.stringify(this.call.raw.slice(0, 80))}`);
    else this.emitContent(this.started > 0 ? trimEndWs(this.held) : this.held, out);
    this.call = undefined;
    this.held = "";
    return out;
  }

  private inContent(text: string, out: AnswerPiece[]): string {
    const buffer = this.held + text;
    const open = buffer.indexOf(TOOL_CALL_OPEN);
    if (open >= 0) {
      this.emitContent(trimEndWs(buffer.slice(0, open)), out);
      this.held = "";
      this.call = { phase: "head", head: new Envelope(HEAD), value: new ValueEnd(), tail: new Envelope(TAIL), raw: "", args: "" };
      return buffer.slice(open + TOOL_CALL_OPEN.length);
    }
    // hold a suffix that could begin "<tool_call>", and the whitespace before it
    let keep = Math.min(buffer.length, TOOL_CALL_OPEN.length - 1);
    while (keep > 0 && !TOOL_CALL_OPEN.startsWith(buffer.slice(buffer.length - keep))) keep--;
    let cut = buffer.length - keep;
    while (cut > 0 && isWs(buffer[cut - 1]!)) cut--;
    this.emitContent(buffer.slice(0, cut), out);
    this.held = buffer.slice(cut);
    return "";
  }

  private emitContent(text: string, out: AnswerPiece[]): void {
    if (this.afterCall) {
      text = text.replace(/^[ \n\t\r]+/, "");
      if (text === "") return;
      if (this.emitted) text = `\n${text}`; // text between or after calls, set apart from what came before
      this.afterCall = false;
    }
    if (text === "") return;
    this.emitted = true;
    out.push({ type: "delta", text });
  }

  private inCall(text: string, out: AnswerPiece[]): string {
    const call = this.call!;
    let args = "";
    for (let i = 0; i < text.length; i++) {
      const ch = text[i]!;
      if (call.phase === "head" || call.phase === "raw") call.raw += ch;
      if (call.phase === "head") {
        const taken = call.head.feed(ch);
        if (call.head.failed) call.phase = "raw";
        else if (call.head.done) {
          if (this.start(call, out) && !taken) i--; // the character after the head opens the arguments
        }
      } else if (call.phase === "arguments") {
        const taken = call.value.feed(ch);
        if (taken) args += ch;
        if (call.value.done) {
          this.flushArgs(call, args, out);
          args = "";
          call.phase = "tail";
          if (!taken) i--; // a scalar's delimiter belongs to the envelope
        }
      } else if (call.phase === "tail") {
        call.tail.feed(ch);
        if (call.tail.failed) {
          this.problems.push(`tool call ${call.index}: unexpected text after the arguments`);
          call.phase = "skip";
          call.raw = "";
        } else if (call.tail.done) return this.finish(text.slice(i + 1));
      }
      if (call.phase === "skip" || call.phase === "raw") {
        if (call.phase === "skip") call.raw += ch;
        if (call.raw.endsWith(TOOL_CALL_CLOSE)) return call.phase === "raw" ? this.lenient(call, out, text.slice(i + 1)) : this.finish(text.slice(i + 1));
      }
    }
    if (call.phase === "arguments" || args !== "") this.flushArgs(call, args, out);
    return "";
  }

  /** Emits the call's start once its name is read; false (and the lenient path) when the name is not a JSON string. */
  private start(call: OpenCall, out: AnswerPiece[]): boolean {
    let name: string;
    try {
      name = JSON.parse(`"${call.head.captured}"`);
    } catch {
      call.phase = "raw";
      return false;
    }
    Object.assign(call, { phase: "arguments", index: this.started++, id: this.newId(), name });
    out.push({ type: "tool_call", index: call.index!, id: call.id!, name });
    return true;
  }

  private flushArgs(call: OpenCall, text: string, out: AnswerPiece[]): void {
    if (text === "") return;
    call.args += text;
    out.push({ type: "tool_args", index: call.index!, text });
  }

  /** The call is closed (a problem noted if its arguments are not JSON); the text after `</tool_call>` goes on as content. */
  private finish(after: string): string {
    const call = this.call!;
    try {
      JSON.parse(call.args);
    } catch (err) {
      this.problems.push(`tool call ${call.index}: arguments are not JSON: ${(err as Error).message}`);
    }
    this.completed++;
    this.call = undefined;
    this.afterCall = true;
    return after;
  }

  /** A block that left the expected shape before its name: parsed whole, any key order, once closed. */
  private lenient(call: OpenCall, out: AnswerPiece[], after: string): string {
    const block = call.raw.slice(0, -TOOL_CALL_CLOSE.length);
    let parsed: unknown;
    try {
      parsed = JSON.parse(block);
    } catch {
      /* reported below */
    }
    const ok = typeof parsed === "object" && parsed !== null && typeof (parsed as { name?: unknown }).name === "string";
    if (!ok) {
      this.problems.push(`a tool call is not {"name": …, "arguments": …}: ${JSON.stringify(block.slice(0, 80))}`);
      this.call = undefined;
      this.afterCall = true;
      return after;
    }
    const { name, arguments: value } = parsed as { name: string; arguments?: unknown };
    Object.assign(call, { index: this.started++, id: this.newId(), name });
    out.push({ type: "tool_call", index: call.index!, id: call.id!, name });
    this.flushArgs(call, typeof value === "string" ? value : JSON.stringify(value ?? {}), out);
    return this.finish(after);
  }
}
