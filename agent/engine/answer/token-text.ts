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
const WHOLE = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Each token's text when its bytes are whole characters on their own (most tokens), filled in as tokens are
 * first seen, per table: such a token after whole characters is that text, with no decoder call.
 */
const wholeTexts = new WeakMap<ByteTable, (string | null)[]>();

function wholeText(bytes: Uint8Array): string | null {
  try {
    return WHOLE.decode(bytes);
  } catch {
    return null; // a part of a character, or bytes that are not UTF-8: the streaming decoder reads them in place
  }
}

/**
 * Most tokens are whole characters, and cost one array read; the rest go through the streaming decoder (about
 * 0.1 µs). A native detokenize call costs 1 µs or more.
 */
export class ByteText implements TextOfTokens {
  // ignoreBOM keeps a U+FEFF the model writes first, as llama.cpp's own decode does (the default would drop it)
  private readonly decoder = new TextDecoder("utf-8", { ignoreBOM: true });
  private readonly texts: (string | null)[];
  /** Whether the decoder holds the start of a character (the tokens after it go through the decoder). */
  private readonly held = new HeldBytes();

  constructor(private readonly table: ByteTable) {
    let texts = wholeTexts.get(table);
    if (texts === undefined) wholeTexts.set(table, (texts = []));
    this.texts = texts;
  }

  push(token: Token): string {
    if (!this.held.any) {
      const known = this.texts[token];
      if (typeof known === "string") return known;
    }
    const bytes = this.table.get(token);
    // llama.cpp's own decode aborts on a token outside its vocabulary; none is ever sampled
    if (bytes === undefined) throw new RangeError(`token ${token} is outside the vocabulary`);
    if (!this.held.any && this.texts[token] === undefined) {
      const text = wholeText(bytes);
      this.texts[token] = text;
      if (text !== null) return text;
    }
    this.held.push(bytes);
    return this.decoder.decode(bytes, STREAM);
  }

  flush(): string {
    this.held.reset();
    return this.decoder.decode();
  }
}

/**
 * Whether a streaming UTF-8 decoder holds bytes after the ones pushed: the WHATWG Encoding Standard's UTF-8
 * decoder's state (bytes needed, and the range the next byte must fall in), without its output.
 */
export class HeldBytes {
  private needed = 0;
  private seen = 0;
  private lower = 0x80;
  private upper = 0xbf;

  get any(): boolean {
    return this.needed > 0;
  }

  push(bytes: Uint8Array): void {
    for (const byte of bytes) this.byte(byte);
  }

  reset(): void {
    this.needed = this.seen = 0;
    this.lower = 0x80;
    this.upper = 0xbf;
  }

  private byte(byte: number): void {
    if (this.needed > 0) {
      if (byte >= this.lower && byte <= this.upper) {
        this.lower = 0x80;
        this.upper = 0xbf;
        if (++this.seen === this.needed) this.needed = this.seen = 0;
        return;
      }
      this.reset(); // the character is cut: U+FFFD, and this byte is read afresh
    }
    if (byte >= 0xc2 && byte <= 0xdf) this.needed = 1;
    else if (byte >= 0xe0 && byte <= 0xef) {
      this.needed = 2;
      if (byte === 0xe0) this.lower = 0xa0;
      if (byte === 0xed) this.upper = 0x9f;
    } else if (byte >= 0xf0 && byte <= 0xf4) {
      this.needed = 3;
      if (byte === 0xf0) this.lower = 0x90;
      if (byte === 0xf4) this.upper = 0x8f;
    }
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
