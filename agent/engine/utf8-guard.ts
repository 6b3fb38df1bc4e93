// Keeps an answer under a grammar valid UTF-8. llama.cpp's grammar decodes a token's bytes leniently (the bytes after
// a lead byte are not checked to be continuations; C0, C1, F5–FF, overlong and surrogate forms pass as one character),
// while the answer's text reads every invalid byte as U+FFFD, so a string could come out past its maxLength. The
// guard follows the UTF-8 decoder's state over the tokens generated and bans, by token bias, each token whose bytes
// would be invalid from that state.
import { TokenBias, type LlamaModel, type SequenceEvaluateOptions, type Token, type Tokenizer } from "node-llama-cpp";
import { biasMap } from "./sampler.ts";
import { grammarBytes } from "./token-bytes.ts";

// Decoder states: between characters; n continuation bytes to go (80–BF each); or the constrained second byte after
// E0 (A0–BF), ED (80–9F, no surrogates), F0 (90–BF) and F4 (80–8F, at most U+10FFFF).
const ACCEPT = 0, NEED1 = 1, NEED2 = 2, NEED3 = 3, AFTER_E0 = 4, AFTER_ED = 5, AFTER_F0 = 6, AFTER_F4 = 7;
const STATES = 8;
export const REJECT = 255;

const isContinuation = (byte: number) => byte >= 0x80 && byte <= 0xbf;

/** The decoder's state after one byte, or REJECT. */
export function step(state: number, byte: number): number {
  switch (state) {
    case ACCEPT:
      if (byte < 0x80) return ACCEPT;
      if (byte >= 0xc2 && byte <= 0xdf) return NEED1;
      if (byte === 0xe0) return AFTER_E0;
      if (byte === 0xed) return AFTER_ED;
      if (byte >= 0xe1 && byte <= 0xef) return NEED2;
      if (byte === 0xf0) return AFTER_F0;
      if (byte >= 0xf1 && byte <= 0xf3) return NEED3;
      if (byte === 0xf4) return AFTER_F4;
      return REJECT; // a stray continuation, C0/C1 (always overlong) or F5–FF (past U+10FFFF)
    case AFTER_E0:
      return byte >= 0xa0 && byte <= 0xbf ? NEED1 : REJECT;
    case AFTER_ED:
      return byte >= 0x80 && byte <= 0x9f ? NEED1 : REJECT;
    case AFTER_F0:
      return byte >= 0x90 && byte <= 0xbf ? NEED2 : REJECT;
    case AFTER_F4:
      return byte >= 0x80 && byte <= 0x8f ? NEED2 : REJECT;
    default:
      return isContinuation(byte) ? state - 1 : REJECT;
  }
}

/** The decoder's state after a run of bytes, or REJECT. */
export function run(state: number, bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length && state !== REJECT; i++) state = step(state, bytes[i]!);
  return state;
}

/** Each token's state after it from each state (`next[token * 8 + state]`), and the tokens banned in each state. */
export interface Utf8Table {
  next: Uint8Array;
  banned: Token[][];
}

/**
 * A token is banned in a state when its bytes are invalid from there, unless llama.cpp's grammar already refuses it
 * by its first byte: a continuation byte between characters, any other byte within one (its decoder checks those,
 * and a stray continuation after a whole character). What is left to ban is small (C0, C1 and F5–FF, a lead byte
 * followed within the token by a byte that does not continue it, the ranges after E0/ED/F0/F4, a continuation too
 * many), where listing every invalid token would cost a whole vocabulary's share of continuation tokens on every
 * sampled token (about 60 ns each). Ending the answer mid-character is banned too.
 */
export function utf8Table(bytes: readonly Uint8Array[], isEog: (token: Token) => boolean): Utf8Table {
  const next = new Uint8Array(bytes.length * STATES);
  const banned: Token[][] = Array.from({ length: STATES }, () => []);
  bytes.forEach((piece, token) => {
    const eog = isEog(token as Token);
    for (let state = 0; state < STATES; state++) {
      const after = run(state, piece);
      next[token * STATES + state] = after;
      if (eog ? state !== ACCEPT : after === REJECT && (state === ACCEPT) !== isContinuation(piece[0]!)) banned[state]!.push(token as Token);
    }
  });
  return { next, banned };
}

/** The decoder's state over one answer, and the token bias it asks for in that state. */
export class Utf8Guard {
  private state = ACCEPT;
  /** Per base bias (none: the empty one), the merged bias of each state, built on first use. */
  private readonly merged = new Map<TokenBias, (TokenBias | undefined)[]>();
  readonly none: TokenBias;

  constructor(
    private readonly table: Utf8Table,
    private readonly tokenizer: Tokenizer,
  ) {
    this.none = new TokenBias(tokenizer);
  }

  /** Follows a generated token. From an invalid state (text generated before the grammar held) it starts afresh. */
  push(token: Token): void {
    const { next } = this.table;
    const after = next[token * STATES + this.state]!;
    this.state = after !== REJECT ? after : next[token * STATES + ACCEPT] === REJECT ? ACCEPT : next[token * STATES + ACCEPT]!;
  }

  /** The base bias with this state's bans added (a ban wins over the caller's logit_bias). */
  bias(base: TokenBias = this.none): TokenBias {
    let states = this.merged.get(base);
    if (states === undefined) this.merged.set(base, (states = []));
    let bias = states[this.state];
    if (bias === undefined) {
      bias = new TokenBias(this.tokenizer);
      const map = biasMap(bias);
      for (const [token, logit] of biasMap(base)) map.set(token, logit);
      // TokenBias.set would skip end-of-generation tokens, which mid-character must be banned too
      for (const token of this.table.banned[this.state]!) map.set(token, -Infinity);
      states[this.state] = bias;
    }
    return bias;
  }
}

const tables = new WeakMap<LlamaModel, Utf8Table | null>();

function tableFor(model: LlamaModel): Utf8Table | undefined {
  let table = tables.get(model);
  if (table === undefined) {
    const bytes = grammarBytes(model);
    table = bytes === undefined ? null : utf8Table(bytes, (token) => model.isEogToken(token));
    tables.set(model, table);
  }
  return table ?? undefined;
}

/**
 * Puts the guard in front of the options' token bias, for a generation under a grammar; while a lazy grammar has
 * not yet started (tool_choice "auto"), the bias is the options' own. Undefined when the vocabulary's bytes are unknown.
 */
export function guardUtf8(model: LlamaModel, options: SequenceEvaluateOptions): Utf8Guard | undefined {
  const table = tableFor(model);
  if (table === undefined) return undefined;
  const guard = new Utf8Guard(table, model.tokenizer);
  const base = options.tokenBias;
  const grammar = options.grammarEvaluationState;
  const active = typeof grammar === "function" ? () => grammar() !== undefined : () => true;
  options.tokenBias = () => {
    const own = typeof base === "function" ? base() : base;
    return active() ? guard.bias(own) : (own ?? guard.none);
  };
  return guard;
}
