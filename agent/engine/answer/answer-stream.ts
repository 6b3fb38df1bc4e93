// Turns the model's decoded text into what a session sends: content deltas, reasoning apart when asked for, and
// OpenAI tool calls. Stop sequences cut the raw text first, then the `<think>` block splits off, then tool-call
// markup is parsed out of what is left. Pure: fed text, returns answer pieces, so it is tested without a model.
import type { AnswerPiece } from "../../../src/receipt/answer-record.ts";
import { StopBuffer } from "./stop-buffer.ts";
import { ThinkSplitter } from "./think-splitter.ts";
import { ToolCallStream } from "./tool-calls.ts";

export interface AnswerOptions {
  stop?: readonly string[];
  /** `reasoning_format: "parsed"`: the think block comes out as `reasoning` events, not content. */
  parsedReasoning?: boolean;
  /** Tools may be called: `<tool_call>` blocks become tool-call events. */
  tools?: boolean;
  /** Call ids; tests pass a counter. */
  newId?: () => string;
}

export class AnswerStream {
  private readonly stops?: StopBuffer;
  private readonly think?: ThinkSplitter;
  private readonly calls?: ToolCallStream;
  /** A stop sequence ended the answer: nothing more is read. */
  stopped = false;

  constructor(options: AnswerOptions = {}) {
    if (options.stop !== undefined) this.stops = new StopBuffer(options.stop);
    if (options.parsedReasoning) this.think = new ThinkSplitter();
    if (options.tools) this.calls = new ToolCallStream(options.newId ? { newId: options.newId } : {});
  }

  /** Inside the think block (or before the answer shows whether it opens one), where no call is parsed. */
  get inReasoning(): boolean {
    return this.think?.inReasoning ?? false;
  }

  /** From `<tool_call>` to the end of its arguments: where special tokens must not be sampled. */
  get insideCall(): boolean {
    return this.calls?.insideCall ?? false;
  }

  /** Calls begun (their `tool_call` piece sent), and calls whose closing tag was read. */
  get started(): number {
    return this.calls?.started ?? 0;
  }

  get completed(): number {
    return this.calls?.completed ?? 0;
  }

  /** Whether `parsedReasoning` found a think block (so `reasoning_content` is a string, maybe empty). */
  get hadReasoning(): boolean {
    return this.think?.hadReasoning ?? false;
  }

  push(text: string): AnswerPiece[] {
    if (this.stopped || text === "") return [];
    let rest = text;
    if (this.stops) ({ text: rest, stopped: this.stopped } = this.stops.push(rest));
    return this.afterStop(rest);
  }

  /** The end of generation: whatever was held back comes out (a stop never completed). */
  end(): AnswerPiece[] {
    const out = this.stopped || !this.stops ? [] : this.afterStop(this.stops.flush());
    if (this.think) for (const piece of this.think.end()) out.push(...this.piece(piece.kind, piece.text));
    if (this.calls) out.push(...this.calls.end());
    return out;
  }

  private afterStop(text: string): AnswerPiece[] {
    if (text === "") return [];
    if (!this.think) return this.content(text);
    return this.think.push(text).flatMap((piece) => this.piece(piece.kind, piece.text));
  }

  private piece(kind: "reasoning" | "content", text: string): AnswerPiece[] {
    return kind === "reasoning" ? [{ type: "reasoning", text }] : this.content(text);
  }

  private content(text: string): AnswerPiece[] {
    if (!this.calls) return [{ type: "delta", text }];
    return this.calls.push(text);
  }
}
