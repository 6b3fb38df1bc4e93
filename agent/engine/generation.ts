// One generation on a loaded chat model (agent/engine/engine.ts holds the lock, loading and unloading): the turn's
// prompt on the caller scope's cached sequence, the sampler and grammars, and the answer as events.
import { LlamaGrammarEvaluationState, type ChatWrapper, type LlamaContext, type LlamaContextSequence, type LlamaGrammar, type LlamaModel, type Token } from "node-llama-cpp";
import { ApiError } from "../../src/errors.ts";
import type { FinishReason } from "../../src/receipt/receipt.ts";
import { answerTokenCap, noRoomMessage } from "../../src/session/sealed-request.ts";
import type { GenerateEvent } from "./inference.ts";
import { AnswerPath } from "./answer/answer-path.ts";
import type { AnswerStream } from "./answer/answer-stream.ts";
import { penalised, samplerOptions } from "./sampler.ts";
import { argumentTokenBan } from "./special-tokens.ts";
import { renderTurnPrompt } from "./prompt.ts";
import { lazyGrammar, toolBias } from "./tool-turn.ts";
import type { Turn, TurnGrammar } from "./turn.ts";
import { TokenPace, type GrammarBudget } from "./grammar/grammar-guard.ts";
import type { PromptCache } from "./prompt-cache.ts";
import { openSequence } from "./cached-sequence.ts";
import { guardUtf8 } from "./utf8-guard.ts";
import { LogprobReader, type LogprobTap } from "./logprobs.ts";
import { MAX_LOGPROBS_PER_PIECE, type AnswerPiece } from "../../src/receipt/answer-record.ts";
import { logprobsSize, type TokenLogprob } from "../../src/receipt/logprobs.ts";

/** A chat model loaded for sessions. */
export interface Loaded {
  alias: string;
  sha256: string;
  model: LlamaModel;
  /** Token ids run from 0 to this less one (what logit_bias may name). */
  vocabularySize: number;
  wrapper: ChatWrapper;
  /** Markup tokens banned inside tool-call arguments, listed on first use. */
  argumentBan?: Token[];
  context: LlamaContext;
  /** The context's sequences, each holding one caller scope's last conversation or nothing (DESIGN §9). */
  cache: PromptCache<LlamaContextSequence>;
  /** Whether conversations are kept at all (`--prompt-cache-gb 0`: never). */
  keeps: boolean;
  /** The samplers that read logprobs, made on the first request that asks for them (disposed with the model). */
  logprobs?: LogprobReader;
}

/** The loaded model, held for one session until `release`. */
export interface Held {
  loaded: Loaded;
  release(): void;
}

/** Where a turn's grammar comes from, and how long llama.cpp may take over it. */
export interface Grammars {
  compiled(plan: TurnGrammar): Promise<LlamaGrammar>;
  budget: GrammarBudget;
}

/**
 * One session: the engine held (`hold`), then the prompt, checked against the room the context leaves, and its answer
 * streamed as events and a `done` record; the scope's cached prefix is reused and kept only when the session ends
 * whole. One generator from the hold to the release: each generator layer an event passes through costs every token.
 * Under a grammar, a token past the grammar budget ends the session as the caller's schema_too_complex.
 */
export async function* runTurn(hold: () => Promise<Held>, turn: Turn, signal: AbortSignal | undefined, grammars: Grammars): AsyncGenerator<GenerateEvent, void, void> {
  const { loaded, release } = await hold();
  try {
    const { model } = loaded;
    const { request } = turn;
    const prompt = renderTurnPrompt(model, loaded.wrapper, loaded.alias, turn);
    const { contextSize } = loaded.context;
    const room = contextSize - prompt.length;
    if (room < 1) {
      throw new ApiError(
        "context_length_exceeded",
        `The prompt is ${prompt.length} tokens; ${loaded.alias} serves at most ${contextSize} tokens of prompt and answer together.`,
        { param: request.prompt === undefined ? "messages" : "prompt" },
      );
    }
    // as OpenAI does, and unlike llama-server's silent cap: a caller who asks for more than fits is told the limit
    if (request.max_tokens !== undefined && request.max_tokens > room) {
      throw new ApiError(
        "context_length_exceeded",
        noRoomMessage({ asked: request.max_tokens, prompt: prompt.length, alias: loaded.alias, room, context: contextSize }),
        { param: "max_tokens" },
      );
    }
    // unasked, the default yields to the context, as OpenAI fills what is left
    const budget = Math.min(answerTokenCap(request), room);
    const answer: Token[] = [];
    const sampler = { tokenizer: model.tokenizer, vocabularySize: loaded.vocabularySize, answer, budget };
    const options = samplerOptions(request, sampler);
    const keepAnswer = penalised(request);
    const path = new AnswerPath(model, turn);
    const parsed = turn.answer.parsedReasoning === true;
    loaded.argumentBan ??= turn.answer.tools ? argumentTokenBan(model) : undefined;
    toolBias({ model, vocabularySize: loaded.vocabularySize, argumentBan: loaded.argumentBan ?? [] }, turn, options, path.stream);
    let trigger: ((piece: string, answer: AnswerStream) => void) | undefined;
    if (turn.grammar !== undefined) {
      const grammar = await grammars.compiled(turn.grammar);
      // a JSON answer's grammar and a forced turn's hold from the first token; "auto" waits for `<tool_call>`
      if (turn.grammar.when === "lazy") trigger = lazyGrammar(model, grammar, options);
      else options.grammarEvaluationState = new LlamaGrammarEvaluationState({ model, grammar }); // single-use: one per generation
    }
    // llama.cpp's grammar passes some invalid UTF-8, which the answer would read as U+FFFD (utf8-guard.ts)
    const utf8 = turn.grammar === undefined ? undefined : guardUtf8(model, options);
    let completion = 0;
    // evaluate() ends on its own only when the model samples an end-of-generation token
    let finish: FinishReason = budget > 0 ? "stop" : "length";
    // a scope's own sequence when it asked to be cached; the prefix it shares with the last session is not re-read
    const scope = loaded.keeps && request.cache_prompt !== false ? request.cache_scope : undefined;
    const { sequence, cached, end } = await openSequence(loaded.cache, scope, prompt, Date.now(), scope === undefined ? undefined : request.cache_owner);
    // llama.cpp samples on a thread of its own, so the event loop is free meanwhile; each token is timed here
    const pace = turn.grammar === undefined ? undefined : new TokenPace(grammars.budget, turn.grammar.param);
    // logprobs only when asked: otherwise the context's sampling is not touched (issue 43)
    let tap: LogprobTap | undefined;
    const logprobs = new PendingLogprobs();
    if (request.top_logprobs !== undefined) tap = (loaded.logprobs ??= new LogprobReader(model, loaded.context, loaded.vocabularySize)).tap(request.top_logprobs);
    let ended = false;
    try {
      if (budget > 0) {
        let last = performance.now();
        for await (const token of sequence.evaluate(prompt.slice(cached), options)) {
          // evaluate() ends by itself at an end-of-generation token, without yielding it
          if (signal?.aborted) break;
          if (pace !== undefined) {
            const now = performance.now();
            pace.token(now - last);
            last = now;
          }
          // like llama-server, the tokens that made up a stop sequence count as completion tokens
          completion++;
          if (tap !== undefined) yield* logprobs.push(tap.take(token));
          if (keepAnswer) answer.push(token);
          utf8?.push(token);
          const { piece, pieces, complete } = path.push(token);
          trigger?.(piece, path.stream);
          for (const event of pieces) {
            // the logprobs of the tokens that made it go first, so that its text claims them (src/receipt/answer-record.ts)
            yield* logprobs.flush();
            yield event;
          }
          if (complete) break;
          if (completion >= budget) {
            finish = "length";
            break;
          }
        }
      }
      signal?.throwIfAborted();
      const end = path.end(finish === "length" ? "length" : "stop");
      for (const event of end.pieces) yield* [...logprobs.flush(), event];
      finish = end.finish;
      // the tokens after the last text (a stop sequence's, a call's closing markup): every token has its entry
      yield* logprobs.flush();
      ended = true; // the conversation is whole now, whatever the consumer does with the record
      yield {
        type: "done",
        prompt_tokens: prompt.length,
        cached_tokens: cached,
        completion_tokens: completion,
        finish_reason: finish,
        ...(parsed ? { reasoning_tokens: path.reasoningTokens } : {}),
        model_sha256: loaded.sha256,
      };
    } finally {
      tap?.untap();
      // kept only for the same scope, and only whole: an aborted or failed session leaves nothing a later hit could read
      await end(ended);
    }
  } finally {
    release();
  }
}

/**
 * The entries of tokens whose text has not come out yet: they go out as `logprobs` pieces just before the next text
 * (which claims them), or as soon as a piece's worth is held (an answer held back whole, such as JSON), so that no
 * frame grows past its bound and the agent holds no more than that.
 */
class PendingLogprobs {
  private entries: TokenLogprob[] = [];
  private chars = 0;

  /** One token's entry; a piece's worth goes out at once. */
  *push(entry: TokenLogprob): Generator<AnswerPiece> {
    this.entries.push(entry);
    this.chars += logprobsSize([entry]);
    if (this.entries.length >= MAX_LOGPROBS_PER_PIECE || this.chars >= PIECE_CHARS) yield* this.flush();
  }

  *flush(): Generator<AnswerPiece> {
    if (this.entries.length === 0) return;
    const logprobs = this.entries;
    this.entries = [];
    this.chars = 0;
    yield { type: "logprobs", logprobs };
  }
}

/** About this much JSON at most in one `logprobs` piece, as the frame batcher counts it (agent/daemon/frame-batcher.ts). */
const PIECE_CHARS = 64 * 1024;
