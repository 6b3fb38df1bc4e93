// Turns a stream of generated tokens into text deltas without ever splitting a UTF-8 character: byte-level
// tokens that end mid-character are held until the character is complete.
import type { LlamaModel, Token } from "node-llama-cpp";

const REPLACEMENT = "\uFFFD";
/** A UTF-8 character is at most 4 bytes; past that a trailing U+FFFD is real output, not a split. */
const MAX_HELD_TOKENS = 4;
/** Tokens of context handed to the detokenizer, for tokenizers whose pieces depend on the previous token. */
const TRAIL = 8;

export class TokenText {
  private held: Token[] = [];
  private trail: Token[] = [];

  constructor(private readonly model: LlamaModel) {}

  /** Adds one token; returns the text it completes ("" while a character is still partial). */
  push(token: Token): string {
    this.held.push(token);
    const text = this.model.detokenize(this.held, false, this.trail);
    if (text.endsWith(REPLACEMENT) && this.held.length < MAX_HELD_TOKENS) return "";
    return this.release(text);
  }

  /** Whatever is still held at the end of generation. */
  flush(): string {
    if (this.held.length === 0) return "";
    return this.release(this.model.detokenize(this.held, false, this.trail));
  }

  private release(text: string): string {
    this.trail = [...this.trail, ...this.held].slice(-TRAIL);
    this.held = [];
    return text;
  }
}
