// What callers' requests look like, so audits look the same (issue 43 item 2, design §4 point 3): a bounded sketch
// of every parsed request's shape (route, stream or whole, max_tokens, temperature, which sampling fields and their
// numbers, top_logprobs k, tools / response_format / stop / logit_bias present, client_nonce present with its length
// and alphabet, cache_prompt: false), never its content. An audit draws a shape by how often callers sent it lately and a corpus
// item that can take it, and the shape's fields are written over the item's body.
import { randomInt } from "node:crypto";
import type { RouteRequest } from "../../src/openai/route-request.ts";
import type { CorpusItem } from "./corpus.ts";
import type { Dice } from "./scheduler.ts";

/** The sampling fields a shape carries with their numbers: the same names on every route. */
const NUMERIC_SAMPLING = ["top_p", "top_k", "min_p", "seed", "presence_penalty", "frequency_penalty", "repetition_penalty"] as const;
type NumericSampling = (typeof NUMERIC_SAMPLING)[number];

export interface Shape {
  route: CorpusItem["route"];
  stream: boolean;
  /** The caller's cap, or null when it set none. */
  max_tokens: number | null;
  temperature: number;
  /** Each numeric sampling field the caller set, with its value (a seed only when the caller chose it). */
  sampling: Partial<Record<NumericSampling, number>>;
  /** Alternatives per token when the caller asked for logprobs, else null. */
  top_logprobs: number | null;
  /** Fields whose values are the caller's content: only whether they are there; an item must bring its own. */
  tools: boolean;
  response_format: boolean;
  stop: boolean;
  logit_bias: boolean;
  /** The caller's `x-svc-receipt-nonce`'s length and alphabet, or null without one. */
  client_nonce: { length: number; alphabet: NonceAlphabet } | null;
  cache_prompt_off: boolean;
}

/** The character classes of a receipt nonce (16–64 base64url characters), in the order a shape lists them. */
const NONCE_CLASSES = { digit: "0123456789", lower: "abcdefghijklmnopqrstuvwxyz", upper: "ABCDEFGHIJKLMNOPQRSTUVWXYZ", symbol: "-_" } as const;
type NonceClass = keyof typeof NONCE_CLASSES;
/** The alphabets callers' nonces are drawn from: hex either case, base64url, else the classes the nonce has. */
const NONCE_ALPHABETS = { hex: "0123456789abcdef", HEX: "0123456789ABCDEF", base64url: Object.values(NONCE_CLASSES).join("") } as const;
export type NonceAlphabet = keyof typeof NONCE_ALPHABETS | NonceClass[];

/**
 * Which alphabet a caller's nonce was drawn from, as far as it shows: hex in one case (with a letter: digits alone
 * say no more than digits), base64url when both cases are there, else the classes seen. An audit's nonce drawn from
 * another alphabet (upper case, `-`, `_` where a caller's has lower-hex) would mark it.
 */
export function nonceAlphabet(nonce: string): NonceAlphabet {
  if (/^[0-9a-f]*[a-f][0-9a-f]*$/.test(nonce)) return "hex";
  if (/^[0-9A-F]*[A-F][0-9A-F]*$/.test(nonce)) return "HEX";
  const seen = (Object.keys(NONCE_CLASSES) as NonceClass[]).filter((c) => [...nonce].some((ch) => NONCE_CLASSES[c].includes(ch)));
  return seen.includes("lower") && seen.includes("upper") ? "base64url" : seen;
}

/** A fresh nonce of `length` characters of `alphabet`, each drawn uniformly. */
export function drawNonce({ length, alphabet }: { length: number; alphabet: NonceAlphabet }): string {
  const chars = typeof alphabet === "string" ? NONCE_ALPHABETS[alphabet] : alphabet.map((c) => NONCE_CLASSES[c]).join("");
  return Array.from({ length }, () => chars[randomInt(chars.length)]).join("");
}

/** The shape of a parsed request; undefined for embeddings, which audits never send. `drawnSeed`: the seed a
 * complete request was given (session-for.ts), so a seed the caller did not choose is not kept as one. */
export function shapeOf(request: RouteRequest, drawnSeed?: number): Shape | undefined {
  if (request.kind === "embeddings") return undefined;
  const { body } = request;
  const sampling: Shape["sampling"] = {};
  for (const field of NUMERIC_SAMPLING) {
    const value = body[field];
    if (typeof value === "number" && !(field === "seed" && value === drawnSeed)) sampling[field] = value;
  }
  return {
    route: request.kind,
    stream: request.stream,
    max_tokens: body.max_tokens ?? null,
    temperature: body.temperature,
    sampling,
    top_logprobs: request.logprobs ? (body.top_logprobs ?? 0) : null,
    tools: body.tools !== undefined,
    response_format: body.response_format !== undefined,
    stop: body.stop !== undefined,
    logit_bias: body.logit_bias !== undefined,
    client_nonce: body.client_nonce === null ? null : { length: body.client_nonce.length, alphabet: nonceAlphabet(body.client_nonce) },
    cache_prompt_off: body.cache_prompt === false,
  };
}

/** At most this many distinct shapes are kept: past it the rarest is forgotten. */
export const MAX_SHAPES = 1_000;
/** Every hour each shape's weight halves, so the sketch follows today's traffic. */
export const SHAPE_HALF_LIFE_MS = 60 * 60_000;
/** A shape whose weight decays below this is forgotten. */
const FORGOTTEN = 1e-3;

export class TrafficShapes {
  private readonly weights = new Map<string, { shape: Shape; weight: number }>();
  private decayedAt: number;

  constructor(private readonly dice: Dice) {
    this.decayedAt = dice.now();
  }

  get size(): number {
    return this.weights.size;
  }

  /** A caller's request of this shape was parsed. */
  note(shape: Shape | undefined): void {
    if (shape === undefined) return;
    this.decay();
    const key = JSON.stringify(shape);
    const held = this.weights.get(key);
    if (held) {
      held.weight += 1;
      return;
    }
    if (this.weights.size >= MAX_SHAPES) this.forgetRarest();
    this.weights.set(key, { shape, weight: 1 });
  }

  /** A shape drawn by weight among those `fits` accepts, or undefined when none does. */
  draw(fits: (shape: Shape) => boolean): Shape | undefined {
    this.decay();
    const candidates = [...this.weights.values()].filter((w) => fits(w.shape));
    const total = candidates.reduce((sum, w) => sum + w.weight, 0);
    let at = this.dice.random() * total;
    for (const w of candidates) {
      at -= w.weight;
      if (at < 0) return w.shape;
    }
    return candidates.at(-1)?.shape;
  }

  private decay(): void {
    const halvings = Math.floor((this.dice.now() - this.decayedAt) / SHAPE_HALF_LIFE_MS);
    if (halvings <= 0) return;
    this.decayedAt += halvings * SHAPE_HALF_LIFE_MS;
    const factor = 0.5 ** halvings;
    for (const [key, w] of this.weights) {
      w.weight *= factor;
      if (w.weight < FORGOTTEN) this.weights.delete(key);
    }
  }

  private forgetRarest(): void {
    let rarest: [string, number] | undefined;
    for (const [key, w] of this.weights) if (rarest === undefined || w.weight < rarest[1]) rarest = [key, w.weight];
    if (rarest) this.weights.delete(rarest[0]);
  }
}

const has = (body: Record<string, unknown>, key: string) => body[key] !== undefined && body[key] !== null;
/** A JSON response format: chat and legacy `response_format`, Responses `text.format`. */
const hasFormat = (body: Record<string, unknown>) => has(body, "response_format") || (typeof body.text === "object" && body.text !== null && has(body.text as Record<string, unknown>, "format"));

/** What an item must match of a shape: the route, and which content-bearing fields are there. */
const itemClass = (item: CorpusItem) => {
  const { body } = item;
  return JSON.stringify([item.route, has(body, "tools"), hasFormat(body), has(body, "stop"), has(body, "logit_bias")]);
};
const shapeClass = (shape: Shape) => JSON.stringify([shape.route, shape.tools, shape.response_format, shape.stop, shape.logit_bias]);

/** Whether `item` can take `shape`: the same route, and the content-bearing fields there exactly when the shape has them. */
export const fits = (item: CorpusItem, shape: Shape): boolean => itemClass(item) === shapeClass(shape);

/** The corpus by what its items can take: built once, so a draw costs the same whatever the corpus's size. */
export class CorpusIndex {
  private readonly byClass = new Map<string, CorpusItem[]>();

  constructor(readonly items: readonly CorpusItem[]) {
    for (const item of items) {
      const key = itemClass(item);
      const held = this.byClass.get(key);
      if (held) held.push(item);
      else this.byClass.set(key, [item]);
    }
  }

  /** The items that can take `shape` (none: an empty list). */
  fitting(shape: Shape): readonly CorpusItem[] {
    return this.byClass.get(shapeClass(shape)) ?? [];
  }
}

/** The fields a shape sets, in whichever spelling a route takes: taken out of the item's body before the shape's go in. */
const SHAPED = ["stream", "stream_options", "max_tokens", "max_completion_tokens", "max_output_tokens", "temperature", ...NUMERIC_SAMPLING, "repeat_penalty", "logprobs", "top_logprobs", "include", "cache_prompt"];
const LOGPROBS_INCLUDE = "message.output_text.logprobs";

/** The item's body in the shape, and the headers beside it (a fresh receipt nonce of the caller's length and alphabet). */
export function shaped(item: CorpusItem, shape: Shape): { body: Record<string, unknown>; headers: Record<string, string> } {
  const body: Record<string, unknown> = Object.fromEntries(Object.entries(item.body).filter(([k]) => !SHAPED.includes(k)));
  if (shape.stream) body.stream = true;
  if (shape.max_tokens !== null) body[shape.route === "responses" ? "max_output_tokens" : "max_tokens"] = shape.max_tokens;
  body.temperature = shape.temperature;
  Object.assign(body, shape.sampling);
  if (shape.top_logprobs !== null) {
    if (shape.route === "chat") Object.assign(body, { logprobs: true, top_logprobs: shape.top_logprobs });
    else if (shape.route === "completions") body.logprobs = shape.top_logprobs;
    else Object.assign(body, { include: [LOGPROBS_INCLUDE], top_logprobs: shape.top_logprobs });
  }
  if (shape.cache_prompt_off) body.cache_prompt = false;
  const headers: Record<string, string> = shape.client_nonce === null ? {} : { "x-svc-receipt-nonce": drawNonce(shape.client_nonce) };
  return { body, headers };
}

/** An audit's item and body: a shape drawn from callers' traffic and an item that fits it, at random; with no shape
 * any item fits yet (no traffic seen, or none an item can take), an item as the corpus holds it. */
export function draftAudit(corpus: CorpusIndex, shapes: TrafficShapes | undefined, dice: Dice): { item: CorpusItem; headers: Record<string, string> } {
  const shape = shapes?.draw((s) => corpus.fitting(s).length > 0);
  const pool = shape === undefined ? corpus.items : corpus.fitting(shape);
  const item = pool[Math.floor(dice.random() * pool.length)]!;
  if (shape === undefined) return { item, headers: {} };
  const { body, headers } = shaped(item, shape);
  return { item: { ...item, body }, headers };
}
