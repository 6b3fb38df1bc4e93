// Log probabilities (issue 43) as every route writes them and a v4 receipt covers them: one entry per generated
// token, its id and bytes, the natural log of its probability under the model's own distribution at that position,
// and the most likely alternatives there. Portable: part of the verifier in src/receipt/index.ts.
import * as z from "zod";
import { canonicalJson } from "./canonical-json.ts";
import { sha256Hex } from "./sha256.ts";

/** OpenAI's most alternatives per position on chat and Responses (`top_logprobs`); legacy completions allow 5. */
export const MAX_TOP_LOGPROBS = 20;
export const MAX_LEGACY_LOGPROBS = 5;
/** OpenAI's value for a token too unlikely to have a log probability: here, one whose probability is 0 in single precision. */
export const UNLIKELY_LOGPROB = -9999;
/** Generous for any tokenizer's longest token, in bytes. */
export const MAX_TOKEN_BYTES = 1024;

const TokenId = z.int().min(0).max(2 ** 31 - 1);
const Logprob = z.number().min(UNLIKELY_LOGPROB).max(0);

/** One alternative at a position: llama-server's `{id, token, bytes, logprob}`, OpenAI's three fields and the token id. */
export const TopLogprobSchema = z.strictObject({
  id: TokenId,
  token: z.string(),
  bytes: z.array(z.int().min(0).max(255)).max(MAX_TOKEN_BYTES),
  logprob: Logprob,
});
export type TopLogprob = z.infer<typeof TopLogprobSchema>;

/** One generated token: the alternative it was, and the most likely ones at its position (most likely first). */
export const TokenLogprobSchema = TopLogprobSchema.extend({ top_logprobs: z.array(TopLogprobSchema).max(MAX_TOP_LOGPROBS) });
export type TokenLogprob = z.infer<typeof TokenLogprobSchema>;

/** One decoder for every token (a new one each costs more than the decoding); a byte order mark is kept as U+FEFF. */
const decoder = new TextDecoder("utf-8", { ignoreBOM: true });

/**
 * A token's `token` string, a function of its bytes (so a verifier checks it): the bytes read as UTF-8 with an
 * incomplete character at the end left out (its bytes are in `bytes`, and the next token completes it), any other
 * byte that is not UTF-8 read as U+FFFD (and EF BB BF as U+FEFF, not dropped as a byte order mark). This is a
 * streaming UTF-8 decoder's output (WHATWG Encoding, `ignoreBOM`), as llama-server writes the valid prefix of a
 * token's text.
 */
export function tokenString(bytes: ArrayLike<number>): string {
  const text = decoder.decode(Uint8Array.from(bytes as ArrayLike<number>), { stream: true });
  decoder.decode(); // forget the incomplete character, so that the next token starts afresh
  return text;
}

/**
 * About how many characters the entries take as JSON (an entry's keys, id and number, its token and its bytes as
 * numbers): what a frame, a piece and what the gateway holds count them as.
 */
export function logprobsSize(entries: readonly TokenLogprob[]): number {
  let size = 0;
  for (const entry of entries) for (const alt of [entry, ...entry.top_logprobs]) size += 64 + alt.token.length + 4 * alt.bytes.length;
  return size;
}

/** What `logprobs_sha256` and `content_logprobs_sha256` cover: the RFC 8785 JSON of the entries, in order. */
export function logprobsSha256(entries: readonly TokenLogprob[]): string {
  return sha256Hex(canonicalJson(entries));
}

/** The first entry whose `token` is not its bytes' string, as a problem; undefined when each is. */
export function tokenStringProblem(entries: readonly TokenLogprob[]): string | undefined {
  for (const [i, entry] of entries.entries()) {
    if (entry.token !== tokenString(entry.bytes)) return `logprobs[${i}].token is not the string of its bytes`;
    const top = entry.top_logprobs.findIndex((alt) => alt.token !== tokenString(alt.bytes));
    if (top !== -1) return `logprobs[${i}].top_logprobs[${top}].token is not the string of its bytes`;
  }
  return undefined;
}

/**
 * OpenAI's legacy `logprobs` object for these entries: the tokens, their log probabilities, each position's
 * alternatives as {token: logprob} (an alternative whose string repeats an earlier one's is left out: the entries in
 * `content` keep them all, with their ids), and where each token's string starts in the tokens' strings joined
 * (in Unicode code points, counted from `offset`). `content` is llama-server's list of the entries themselves, which
 * the receipt covers.
 */
export function legacyLogprobs(entries: readonly TokenLogprob[], offset = 0) {
  let at = offset;
  const text_offset = entries.map((entry) => {
    const start = at;
    at += [...entry.token].length;
    return start;
  });
  return {
    tokens: entries.map((entry) => entry.token),
    token_logprobs: entries.map((entry) => entry.logprob),
    top_logprobs: entries.map((entry) => {
      // no prototype, so that a token spelled `__proto__` is a key like any other
      const top: Record<string, number> = Object.create(null);
      for (const alt of entry.top_logprobs) if (!Object.hasOwn(top, alt.token)) top[alt.token] = alt.logprob;
      return top;
    }),
    text_offset,
    content: [...entries],
  };
}

/** Where the legacy arrays of a stream's next event start: past every token string so far. */
export function legacyOffsetAfter(entries: readonly TokenLogprob[], offset = 0): number {
  return entries.reduce((at, entry) => at + [...entry.token].length, offset);
}
