// Each generated token's log probability under the model's own distribution at its position (issue 43): the softmax
// of the raw logits over the whole vocabulary, before logit_bias, penalties, the grammar, temperature and top-k/top-p/
// min-p, as llama-server's `n_probs` reports it (without `post_sampling_probs`). So the values depend only on the
// logits and on which token was chosen, never on the request's sampling settings or its seed, and an auditor who
// re-scores the prompt and these tokens in one forward pass gets them back.
//
// node-llama-cpp reports only its sampler chain's output (AddonContext's SampleToken softmaxes `cur_p` after the
// chain), and handing the whole vocabulary's probabilities to JavaScript costs about 90 ms a token for Qwen3's 151,936
// tokens here. So neutral samplers (no bias, penalty or grammar) read the same logits, right after the request's own
// sampler chose its token, each returning little:
// - greedy, with `confidence`: the most likely token's probability, 1/Z (Z the softmax's normaliser), which costs a
//   sort of the vocabulary in node-llama-cpp (as llama-server's own n_probs does);
// - top-k N at temperature 1, with `probabilities`: the N most likely tokens, their probabilities renormalised over
//   the N, so each divided by the first's is exp(logit − max logit);
// - for a chosen token outside both (sampled from the tail, or forced by a grammar or logit_bias): every other token
//   but the most likely banned, top-k 2, which gives its exp(logit − max logit) the same way.
// The calls run on llama.cpp's thread pool while the event loop waits, between the request's sampling and the next
// decode, so the logits they read are the ones the token was chosen from.
import { type LlamaContext, type LlamaModel, type Token } from "node-llama-cpp";
import { tokenString, UNLIKELY_LOGPROB, type TokenLogprob, type TopLogprob } from "../../src/receipt/logprobs.ts";
import { grammarBytes } from "./token-bytes.ts";

/** node-llama-cpp's native sampler (AddonSampler) as far as it is used here. */
interface NativeSampler {
  applyConfig(config: Record<string, unknown>): void;
  dispose(): void;
}
type SampleResult = number | [token: number, probabilities: number[] | undefined, confidence: number | undefined];
/** node-llama-cpp's native context (AddonContext): its sampleToken, which every evaluate() calls once a token. */
interface NativeContext {
  sampleToken(batchLogitIndex: number, sampler: NativeSampler, probabilities?: boolean, confidence?: boolean): Promise<SampleResult>;
}

/** The internals this reads, checked so that a node-llama-cpp that moved them fails loudly rather than reporting nothing. */
function natives(model: LlamaModel, context: LlamaContext): { context: NativeContext; newSampler: () => NativeSampler } {
  const ctx = (context as unknown as { _ctx?: NativeContext })._ctx;
  const { _model: addonModel, _llama: llama } = model as unknown as { _model?: unknown; _llama?: { _bindings?: { AddonSampler?: new (model: unknown) => NativeSampler } } };
  const Sampler = llama?._bindings?.AddonSampler;
  if (typeof ctx?.sampleToken !== "function" || addonModel === undefined || typeof Sampler !== "function") {
    throw new Error("node-llama-cpp no longer exposes its context's sampleToken or AddonSampler: logprobs need another way in");
  }
  return { context: ctx, newSampler: () => new Sampler(addonModel) };
}

/** A token's bytes, from the GGUF vocabulary (special tokens as their text), or its detokenized text for other vocabularies. */
function bytesOf(model: LlamaModel): (token: number) => number[] {
  const table = grammarBytes(model);
  const utf8 = new TextEncoder();
  return (token) => Array.from(table?.[token] ?? utf8.encode(model.detokenize([token as Token], true)));
}

/** A sampleToken result's parts, as asked for. */
const probabilitiesOf = (result: SampleResult): number[] => (Array.isArray(result) ? (result[1] ?? []) : []);
const confidenceOf = (result: SampleResult): number => (Array.isArray(result) ? (result[2] ?? 0) : 0);
const tokenOf = (result: SampleResult): number => (Array.isArray(result) ? result[0] : result);

const logOf = (p: number): number => (p > 0 ? Math.log(p) : Number.NEGATIVE_INFINITY);
/** A log probability as the answer writes it: never above 0, and OpenAI's -9999 where single precision has none. */
const written = (logprob: number): number => (Number.isFinite(logprob) ? Math.min(0, logprob) : UNLIKELY_LOGPROB);

/**
 * The samplers for one model, kept while it is loaded; `read` taps one context's sampling for one generation. Ties for
 * the most likely token are harmless: every value is read relative to the largest logit, whichever token holds it.
 */
export class LogprobReader {
  private readonly greedy: NativeSampler;
  private readonly top: NativeSampler;
  private readonly pair: NativeSampler;
  private readonly bytes: (token: number) => number[];
  private readonly native: ReturnType<typeof natives>;
  /** Every token id but two, rewritten per fallback (a Uint32Array of the vocabulary, kept). */
  private readonly ids: Uint32Array;
  private readonly banned: Float32Array;
  /** The `top` sampler's current top-k. */
  private topK = -1;

  constructor(
    model: LlamaModel,
    context: LlamaContext,
    /** Token ids run from 0 to this less one. */
    private readonly vocabularySize: number,
  ) {
    this.native = natives(model, context);
    this.greedy = this.native.newSampler();
    this.greedy.applyConfig({});
    this.top = this.native.newSampler();
    this.pair = this.native.newSampler();
    this.bytes = bytesOf(model);
    this.ids = new Uint32Array(Math.max(0, vocabularySize - 2));
    this.banned = new Float32Array(this.ids.length).fill(Number.NEGATIVE_INFINITY);
  }

  dispose(): void {
    for (const sampler of [this.greedy, this.top, this.pair]) sampler.dispose();
  }

  /**
   * Taps the context's sampling until `untap`: after each token the request's sampler chooses, its entry (with `top`
   * alternatives) is read off the same logits and queued for `take`. One generation at a time holds the context.
   */
  tap(top: number): LogprobTap {
    const ctx = this.native.context;
    if (Object.hasOwn(ctx, "sampleToken")) throw new Error("the context's sampling is already tapped");
    if (top > 0 && top !== this.topK) {
      this.top.applyConfig({ temperature: 1, topK: Math.min(top, this.vocabularySize), seed: 0 });
      this.topK = top;
    }
    const original = ctx.sampleToken.bind(ctx);
    const queue: TokenLogprob[] = [];
    const sampleToken = async (index: number, sampler: NativeSampler, ...rest: [boolean?, boolean?]): Promise<SampleResult> => {
      const result = await original(index, sampler, ...rest);
      const token = tokenOf(result);
      // -1: nothing could be sampled, which evaluate() reports itself
      if (token >= 0) queue.push(await this.entry(original, index, token, top));
      return result;
    };
    Object.defineProperty(ctx, "sampleToken", { value: sampleToken, configurable: true, writable: true });
    return {
      take(token: Token): TokenLogprob {
        const entry = queue.shift();
        if (entry?.id !== token) throw new Error(`the logprobs read were for token ${entry?.id}, not the token generated, ${token}`);
        return entry;
      },
      untap() {
        delete (ctx as Partial<NativeContext>).sampleToken;
      },
    };
  }

  /** The chosen token's entry: its log probability, and the `top` most likely at its position. */
  private async entry(sample: NativeContext["sampleToken"], index: number, chosen: number, top: number): Promise<TokenLogprob> {
    const greedy = await sample(index, this.greedy, false, true);
    const first = tokenOf(greedy);
    // log(1/Z): the most likely token's log probability, which every other is read against
    const logMax = logOf(confidenceOf(greedy));
    const alternatives: TopLogprob[] = [];
    if (top > 0) {
      const probabilities = probabilitiesOf(await sample(index, this.top, true, false));
      const logFirst = logOf(probabilities[1] ?? 0);
      for (let i = 0; i + 1 < probabilities.length; i += 2) {
        alternatives.push(this.alternative(probabilities[i]!, logOf(probabilities[i + 1]!) - logFirst + logMax));
      }
    }
    const listed = alternatives.find((alt) => alt.id === chosen);
    const logprob = listed?.logprob ?? (chosen === first ? written(logMax) : written((await this.relative(sample, index, chosen, first)) + logMax));
    return { ...this.alternative(chosen, logprob), top_logprobs: alternatives };
  }

  private alternative(id: number, logprob: number): TopLogprob {
    const bytes = this.bytes(id);
    return { id, token: tokenString(bytes), bytes, logprob: written(logprob) };
  }

  /** log exp(logit(chosen) − logit(first)): every other token banned, the two renormalised between them. */
  private async relative(sample: NativeContext["sampleToken"], index: number, chosen: number, first: number): Promise<number> {
    let n = 0;
    for (let id = 0; id < this.vocabularySize; id++) if (id !== chosen && id !== first) this.ids[n++] = id;
    this.pair.applyConfig({ temperature: 1, topK: 2, seed: 0, tokenBiasKeys: this.ids, tokenBiasValues: this.banned });
    const probabilities = probabilitiesOf(await sample(index, this.pair, true, false));
    // [id, p, id, p]: ids at the even places
    const p = (id: number) => (probabilities[0] === id ? probabilities[1] : probabilities[2] === id ? probabilities[3] : undefined) ?? 0;
    return logOf(p(chosen)) - logOf(p(first));
  }
}

/** One generation's tap on the context's sampling. */
export interface LogprobTap {
  /** The entry of the token evaluate() just yielded (read when it was sampled). */
  take(token: Token): TokenLogprob;
  /** Gives the context its own sampling back. */
  untap(): void;
}
