// Turns a stream of generated tokens into text deltas without ever splitting a UTF-8 character: byte-level
// tokens that end mid-character are held until the character is complete.
import type { LlamaModel, Token } from "node-llama-cpp";
import { textBytes, type ByteTable } from "../token-bytes.ts";

/** Generated tokens in, text deltas out. */
export interface TextOfTokens {
  /** Adds one token; returns the text it completes ("" while a character is still partial). */
  push(token: Token): string;
  /** Whatever is still held at the end of generation. */
  flush(): string;
}

/**
 * The model's own text for its tokens: from each token's bytes through one streaming UTF-8 decoder (which holds a
 * partial character by itself) where the model's detokenize is provably their concatenation (token-bytes.ts), else
 * from native detokenize calls.
 */
export class TokenText implements TextOfTokens {
  private readonly text: TextOfTokens;

  constructor(model: LlamaModel) {
    const bytes = textBytes(model);
    this.text = bytes === undefined ? new NativeText(model) : new ByteText(bytes);
  }

  push(token: Token): string {
    return this.text.push(token);
  }

  flush(): string {
    return this.text.flush();
  }
}

const STREAM = { stream: true };

/** About 0.1 µs a token, where a native detokenize call costs 1 µs or more. */
export class ByteText implements TextOfTokens {
  // ignoreBOM keeps a U+FEFF the model writes first, as llama.cpp's own decode does (the default would drop it)
  private readonly decoder = new TextDecoder("utf-8", { ignoreBOM: true });

  constructor(private readonly table: ByteTable) {}

  push(token: Token): string {
    const bytes = this.table.get(token);
    // llama.cpp's own decode aborts on a token outside its vocabulary; none is ever sampled
    if (bytes === undefined) throw new RangeError(`token ${token} is outside the vocabulary`);
    return this.decoder.decode(bytes, STREAM);
  }

  flush(): string {
    return this.decoder.decode();
  }
}

const REPLACEMENT = "\uFFFD";
/** A UTF-8 character is at most 4 bytes; past that a trailing U+FFFD is real output, not a split. */
const MAX_HELD_TOKENS = 4;
/**
 * Tokens of context the new tokens are decoded after, for tokenizers whose pieces depend on the previous token
 * (a leading space, spaces cleaned around punctuation): at least MIN_TRAIL, at most MAX_TRAIL.
 */
const MIN_TRAIL = 4;
const MAX_TRAIL = 16;

/** For any tokenizer: each token decoded natively, after a trail of the tokens before it. */
export class NativeText implements TextOfTokens {
  private held: Token[] = [];
  private trail: Token[] = [];
  /** The trail's own text, so one detokenize call per token decodes trail and held together. */
  private trailText = "";
  /** The text of trail + held from the last decode, which becomes the trail's text when held joins it. */
  private whole = "";

  constructor(private readonly model: LlamaModel) {}

  push(token: Token): string {
    this.held.push(token);
    const text = this.decode();
    if (text.endsWith(REPLACEMENT) && this.held.length < MAX_HELD_TOKENS) return "";
    this.release();
    return text;
  }

  flush(): string {
    if (this.held.length === 0) return "";
    const text = this.decode();
    this.release();
    return text;
  }

  /**
   * The held tokens' text after the trail's (node-llama-cpp's detokenize with lastTokens, in one call instead of
   * two: the trail's text is known from the decode that added its last tokens).
   */
  private decode(): string {
    if (this.trail.length === 0 || this.trailText === "") {
      this.whole = this.model.detokenize(this.trail.length === 0 ? this.held : [...this.trail, ...this.held]);
      return this.trail.length === 0 ? this.whole : this.model.detokenize(this.held);
    }
    this.whole = this.model.detokenize([...this.trail, ...this.held]);
    return this.whole.startsWith(this.trailText) ? this.whole.slice(this.trailText.length) : this.model.detokenize(this.held);
  }

  private release(): void {
    for (const token of this.held) this.trail.push(token);
    this.held = [];
    if (this.trail.length <= MAX_TRAIL) {
      this.trailText = this.whole;
      return;
    }
    // the window slides in steps, so the trail's text is decoded afresh only once every few tokens
    this.trail = this.trail.slice(-MIN_TRAIL);
    this.trailText = this.model.detokenize(this.trail);
  }
}
