// Lays an answer's pieces out as Responses output items (src/receipt/response-items.ts) and says each step as the
// stream events OpenAI sends: an item added, its content part added, deltas, then the part and the item done.
// One layout serves both forms, so a stream's items are the non-stream body's items for the same pieces.
import { randomHex } from "./ids.ts";
import type { AnswerPiece, AnswerRecord } from "../receipt/answer-record.ts";
import type { TokenLogprob } from "../receipt/logprobs.ts";
import type { OutputItem } from "../receipt/response-items.ts";

export type ResponseEvent = { type: string; sequence_number: number } & Record<string, unknown>;
type ItemStatus = "completed" | "incomplete";

const newItemId = (prefix: string) => `${prefix}_${randomHex(16)}`;

/** A copy of the content part an item holds, if it holds one (reasoning and message items do; calls carry `arguments`). */
function partOf(item: OutputItem): Record<string, unknown> | undefined {
  return item.type === "function_call" ? undefined : structuredClone(item.content[0]);
}

/** The item as `response.output_item.added` shows it: in progress, with nothing in it yet. */
function begun(item: OutputItem): Record<string, unknown> {
  if (item.type === "function_call") return { ...item, status: "in_progress", arguments: "" };
  return { ...item, status: "in_progress", content: [] };
}

export interface LayoutOptions {
  newId?: (prefix: string) => string;
  /** `include: ["message.output_text.logprobs"]`: each `output_text` carries the logprobs of the tokens before its text. */
  logprobs?: boolean;
}

export class ResponseLayout {
  readonly items: OutputItem[] = [];
  private sequence = 0;
  /** Whether the last item is still open (its done events not yet sent). */
  private open = false;
  private readonly newId: (prefix: string) => string;
  private readonly logprobs: boolean;
  /** Logprobs not yet followed by text: the message's when content follows, else not shown (OpenAI has none for reasoning or calls). */
  private pending: TokenLogprob[] = [];

  constructor({ newId = newItemId, logprobs = false }: LayoutOptions = {}) {
    this.newId = newId;
    this.logprobs = logprobs;
  }

  /** An event with the next sequence number, as OpenAI numbers every event of one stream from 0. */
  event(type: string, fields: Record<string, unknown> = {}): ResponseEvent {
    return { type, sequence_number: this.sequence++, ...fields };
  }

  /** Takes one piece; returns the events that say it. */
  add(piece: AnswerPiece): ResponseEvent[] {
    const out: ResponseEvent[] = [];
    const last = this.open ? this.items.at(-1) : undefined;
    if (piece.type === "logprobs") {
      this.pending.push(...piece.logprobs);
      return out;
    }
    // as the answer record counts them (src/receipt/answer-record.ts): the next piece with text claims the entries
    const empty = "text" in piece && piece.text === "";
    const claimed = empty ? [] : this.pending;
    if (!empty) this.pending = [];
    if (piece.type === "tool_args") {
      const index = this.outputIndexOfCall(piece.index);
      const item = this.items[index];
      if (item?.type !== "function_call" || item !== last) throw new Error(`arguments for tool call ${piece.index}, which is not the open item`);
      item.arguments += piece.text;
      out.push(this.event("response.function_call_arguments.delta", { item_id: item.id, output_index: index, delta: piece.text }));
      return out;
    }
    if (piece.type === "tool_call") {
      this.begin({ type: "function_call", id: this.newId("fc"), status: "completed", call_id: piece.id, name: piece.name, arguments: "" }, out);
      return out;
    }
    const kind = piece.type === "reasoning" ? "reasoning" : "message";
    if (last?.type !== kind) {
      this.begin(
        kind === "reasoning"
          ? { type: "reasoning", id: this.newId("rs"), status: "completed", summary: [], content: [{ type: "reasoning_text", text: "" }] }
          : { type: "message", id: this.newId("msg"), status: "completed", role: "assistant", content: [{ type: "output_text", text: "", annotations: [], ...(this.logprobs ? { logprobs: [] } : {}) }] },
        out,
      );
    }
    const item = this.items.at(-1) as Extract<OutputItem, { type: "reasoning" | "message" }>;
    item.content[0].text += piece.text;
    const where = { item_id: item.id, output_index: this.items.length - 1, content_index: 0 };
    if (item.type === "reasoning") out.push(this.event("response.reasoning_text.delta", { ...where, delta: piece.text }));
    else {
      const part = item.content[0];
      const logprobs = this.logprobs ? claimed : [];
      part.logprobs?.push(...logprobs);
      out.push(this.event("response.output_text.delta", { ...where, delta: piece.text, logprobs }));
    }
    return out;
  }

  /** Closes the answer: the last item takes the response's status; an answer with no text and no call gets an empty message. */
  finish(status: ItemStatus): ResponseEvent[] {
    const out: ResponseEvent[] = [];
    if (!this.items.some((item) => item.type !== "reasoning")) this.add({ type: "delta", text: "" }).forEach((e) => out.push(e));
    this.close(status, out);
    return out;
  }

  private begin(item: OutputItem, out: ResponseEvent[]): void {
    this.close("completed", out);
    this.items.push(item);
    this.open = true;
    const output_index = this.items.length - 1;
    out.push(this.event("response.output_item.added", { output_index, item: begun(item) }));
    const part = partOf(item);
    if (part !== undefined) out.push(this.event("response.content_part.added", { item_id: item.id, output_index, content_index: 0, part: { ...part, text: "", ...("logprobs" in part ? { logprobs: [] } : {}) } }));
  }

  private close(status: ItemStatus, out: ResponseEvent[]): void {
    const item = this.items.at(-1);
    if (!this.open || item === undefined) return;
    this.open = false;
    item.status = status;
    const where = { item_id: item.id, output_index: this.items.length - 1 };
    if (item.type === "function_call") {
      out.push(this.event("response.function_call_arguments.done", { ...where, name: item.name, arguments: item.arguments }));
    } else {
      const part = partOf(item)!;
      const text = item.content[0].text;
      if (item.type === "reasoning") out.push(this.event("response.reasoning_text.done", { ...where, content_index: 0, text }));
      else out.push(this.event("response.output_text.done", { ...where, content_index: 0, text, logprobs: [...(item.content[0].logprobs ?? [])] }));
      out.push(this.event("response.content_part.done", { ...where, content_index: 0, part }));
    }
    out.push(this.event("response.output_item.done", { output_index: where.output_index, item: structuredClone(item) }));
  }

  private outputIndexOfCall(callIndex: number): number {
    let seen = -1;
    return this.items.findIndex((item) => item.type === "function_call" && ++seen === callIndex);
  }
}

/** The items of a whole answer, as a non-stream body holds them: reasoning, then the content with its logprobs, then the calls. */
export function itemsOfAnswer(answer: AnswerRecord, status: ItemStatus, options: LayoutOptions = {}): OutputItem[] {
  const layout = new ResponseLayout(options);
  if (answer.reasoning !== null && answer.reasoning !== "") layout.add({ type: "reasoning", text: answer.reasoning });
  if (answer.contentLogprobs.length > 0) layout.add({ type: "logprobs", logprobs: answer.contentLogprobs });
  if (answer.content !== "") layout.add({ type: "delta", text: answer.content });
  answer.toolCalls.forEach((call, index) => {
    layout.add({ type: "tool_call", index, id: call.id, name: call.function.name });
    if (call.function.arguments !== "") layout.add({ type: "tool_args", index, text: call.function.arguments });
  });
  layout.finish(status);
  return layout.items;
}
