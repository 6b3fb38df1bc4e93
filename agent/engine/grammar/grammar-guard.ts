// The agent's own bound on llama.cpp's grammar work as it happens (DESIGN §8), behind the static count every schema
// passes first (src/schema/grammar-work.ts): a grammar that took too long to build, or a token that took too long to
// sample under it, ends the session as the caller's 400 schema_too_complex. llama.cpp's work on one build or one token
// cannot be interrupted: the static count bounds it, and this guard stops the session after it.
import { ApiError } from "../../../src/errors.ts";

export interface GrammarBudget {
  /**
   * Building a grammar (node-llama-cpp parses it and walks its rules synchronously, on the event loop the agent's
   * heartbeats share): one the static count lets through takes about 50 ms at most.
   */
  compileMs: number;
  /** A token sampled under a grammar may take this long… */
  tokenMs: number;
  /**
   * …or this many times the session's fastest token, when that is more (a slow or busy machine is slow for every
   * token; a grammar whose readings multiply is slow for the deep ones).
   */
  tokenFactor: number;
}

export const DEFAULT_GRAMMAR_BUDGET: GrammarBudget = { compileMs: 1_000, tokenMs: 2_000, tokenFactor: 20 };

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** The refusal when building the grammar for `param` took `ms`, or undefined within the budget. */
export function slowCompile(budget: GrammarBudget, param: string, ms: number): ApiError | undefined {
  if (ms <= budget.compileMs) return undefined;
  return new ApiError("schema_too_complex", `${param}: its grammar took ${seconds(ms)} to build (at most ${seconds(budget.compileMs)}); simplify it.`, { param });
}

/** The pace of one session's tokens under a grammar: each `token` past the budget is the session's end. */
export class TokenPace {
  private tokens = 0;
  private fastest?: number;

  constructor(
    private readonly budget: GrammarBudget,
    private readonly param: string,
  ) {}

  /** One token took `ms`: throws schema_too_complex when that was past the budget. */
  token(ms: number): void {
    // the first token carries the prompt's evaluation, not only the grammar's
    if (++this.tokens === 1) return;
    const limit = Math.max(this.budget.tokenMs, this.budget.tokenFactor * (this.fastest ?? 0));
    if (ms > limit) {
      throw new ApiError("schema_too_complex", `${this.param}: its grammar took ${seconds(ms)} to sample token ${this.tokens} (at most ${seconds(limit)}); simplify it.`, { param: this.param });
    }
    this.fastest = Math.min(this.fastest ?? ms, ms);
  }
}
