// Splits Qwen3's decoded output, `<think>\n…\n</think>\n\ncontent`, into reasoning and content, streamed or whole,
// trimming newlines the way Qwen3's template reads them back (reasoning: strip("\n"), content: lstrip("\n")).
//
// The tags are matched as text: `<think>` and `</think>` are user-defined tokens, which detokenize to their text.
// With reasoning off, render the prompt with `new QwenChatWrapper({ thoughts: "discourage" })`: it ends in
// `<think>\n\n</think>\n\n`, byte for byte the official template's enable_thinking=false prompt, so the model writes
// content straight away; the splitter still routes a think block it writes anyway to reasoning.

import { THINK_CLOSE, THINK_OPEN } from "../qwen3-markup.ts";

export interface ThinkPiece {
  kind: "reasoning" | "content";
  text: string;
}

export interface ThinkSplit {
  /** Null when the output had no think block; "" for an empty one. */
  reasoning: string | null;
  content: string;
}

export interface ThinkOptions {
  /** The prompt already opened the block (templates that end their generation prompt with `<think>\n`). */
  startInReasoning?: boolean;
}

/** Whole-text form. */
export function splitThink(text: string, { startInReasoning = false }: ThinkOptions = {}): ThinkSplit {
  let rest = text;
  if (!startInReasoning) {
    const lead = /^\s*/.exec(text)![0];
    if (!text.startsWith(THINK_OPEN, lead.length)) return { reasoning: null, content: text };
    rest = text.slice(lead.length + THINK_OPEN.length);
  }
  const close = rest.indexOf(THINK_CLOSE);
  const reasoning = (close < 0 ? rest : rest.slice(0, close)).replace(/^\n+/, "").replace(/\n+$/, "");
  return { reasoning, content: close < 0 ? "" : rest.slice(close + THINK_CLOSE.length).replace(/^\n+/, "") };
}

/** The length of the longest suffix of `text` that is a proper prefix of `tag`. */
function partialTag(text: string, tag: string): number {
  for (let n = Math.min(text.length, tag.length - 1); n > 0; n--) if (tag.startsWith(text.slice(text.length - n))) return n;
  return 0;
}

/** Streaming form: feed decoded text pieces (from a UTF-8-safe decoder); the pieces out join to `splitThink`'s result. */
export class ThinkSplitter {
  private mode: "start" | "reasoning" | "content";
  private held = ""; // text that may still be (part of) a tag, or reasoning's trailing newlines
  private lead = true; // newlines right after a tag are dropped
  private sawBlock: boolean;

  constructor({ startInReasoning = false }: ThinkOptions = {}) {
    this.mode = startInReasoning ? "reasoning" : "start";
    this.sawBlock = startInReasoning;
  }

  /** Whether a think block began: with `end()`'s output, tells `reasoning: ""` from `reasoning: null`. */
  get hadReasoning(): boolean {
    return this.sawBlock;
  }

  /** Inside an open think block: what the model writes now is reasoning. */
  get inReasoning(): boolean {
    return this.mode === "reasoning";
  }

  push(text: string): ThinkPiece[] {
    const out: ThinkPiece[] = [];
    let rest: string | undefined = this.held + text;
    this.held = "";
    while (rest !== undefined) rest = this.step(rest, out);
    return out;
  }

  /** The end of generation: whatever was held comes out, an unclosed block's trailing newlines dropped. */
  end(): ThinkPiece[] {
    const out: ThinkPiece[] = [];
    if (this.mode === "start") this.emit("content", this.held, out);
    else if (this.mode === "reasoning") this.emit("reasoning", this.held.replace(/\n+$/, ""), out);
    this.held = "";
    return out;
  }

  /** Handles `text` in the current mode; returns what is left for the next mode, if the mode changed. */
  private step(text: string, out: ThinkPiece[]): string | undefined {
    if (this.mode === "start") {
      const body = text.replace(/^\s+/, "");
      if (body.startsWith(THINK_OPEN)) {
        [this.mode, this.lead, this.sawBlock] = ["reasoning", true, true];
        return body.slice(THINK_OPEN.length);
      }
      if (THINK_OPEN.startsWith(body)) return void (this.held = text); // only whitespace and the start of a tag so far
      this.mode = "content";
      this.lead = false; // no think block: the text is content exactly as written
      return text;
    }
    if (this.mode === "reasoning") {
      const close = text.indexOf(THINK_CLOSE);
      if (close >= 0) {
        this.emit("reasoning", text.slice(0, close).replace(/\n+$/, ""), out);
        [this.mode, this.lead] = ["content", true];
        return text.slice(close + THINK_CLOSE.length);
      }
      // hold what could be the start of </think>, and the newlines before it: they go if the tag follows
      let cut = text.length - partialTag(text, THINK_CLOSE);
      while (cut > 0 && text[cut - 1] === "\n") cut--;
      this.emit("reasoning", text.slice(0, cut), out);
      this.held = text.slice(cut);
      return undefined;
    }
    this.emit("content", text, out);
    return undefined;
  }

  private emit(kind: ThinkPiece["kind"], text: string, out: ThinkPiece[]): void {
    if (this.lead && kind === this.mode) {
      text = text.replace(/^\n+/, "");
      if (text === "") return;
      this.lead = false;
    }
    if (text === "") return;
    const last = out.at(-1);
    if (last?.kind === kind) last.text += text;
    else out.push({ kind, text });
  }
}
