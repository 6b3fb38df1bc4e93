// The agent's answer path, token by token: decoded text (token-text.ts) through the answer stream (stops, reasoning,
// tool calls), or, under a JSON response_format, held whole and normalised at the end. One path for a generation
// (generation.ts) and for replaying a provider's tokens (replay.ts), so an audit can show that the tokens it scored
// are the ones that made the answer the receipt covers.
import type { LlamaModel, Token } from "node-llama-cpp";
import { MAX_TOOL_CALLS, type AnswerPiece } from "../../../src/receipt/answer-record.ts";
import type { FinishReason } from "../../../src/receipt/receipt.ts";
import { JSON_GRAMMAR_END } from "../grammar/json-grammar.ts";
import { jsonContent } from "../grammar/json-text.ts";
import type { Turn } from "../turn.ts";
import { AnswerStream, type AnswerOptions } from "./answer-stream.ts";
import { TokenText } from "./token-text.ts";

/** Past the calls one answer may make: the answer ends before it. */
const beyondCalls = (piece: AnswerPiece) => "index" in piece && piece.index >= MAX_TOOL_CALLS;

export class AnswerPath {
  readonly stream: AnswerStream;
  private readonly text: TokenText;
  private readonly parsed: boolean;
  /** The text of a JSON answer, held until the end; undefined for any other. */
  private json: string | undefined;
  /** Tokens read inside the think block, when reasoning comes out apart. */
  reasoningTokens = 0;

  constructor(model: LlamaModel, turn: Turn, options: Partial<AnswerOptions> = {}) {
    this.text = new TokenText(model);
    this.stream = new AnswerStream({ ...turn.answer, ...options });
    this.parsed = turn.answer.parsedReasoning === true;
    this.json = turn.grammar?.when === "json" ? "" : undefined;
  }

  /** One token: the text it completes, the pieces that text makes, and whether the answer is complete with it. */
  push(token: Token): { piece: string; pieces: AnswerPiece[]; complete: boolean } {
    const piece = this.text.push(token);
    if (this.json !== undefined) {
      this.json += piece;
      // the grammar's value is complete once its trailing newlines begin; it would only add more of them
      return { piece, pieces: [], complete: this.json.endsWith(JSON_GRAMMAR_END) };
    }
    const wasReasoning = this.stream.inReasoning;
    const pieces = this.stream.push(piece);
    if (this.parsed && (wasReasoning || this.stream.inReasoning)) this.reasoningTokens++;
    const beyond = pieces.findIndex(beyondCalls);
    if (beyond !== -1) return { piece, pieces: pieces.slice(0, beyond), complete: true };
    return { piece, pieces, complete: this.stream.stopped };
  }

  /** The end of generation ("stop" when the model or a stop ended it, else "length"): the held pieces and the final reason. */
  end(finish: "stop" | "length"): { pieces: AnswerPiece[]; finish: FinishReason } {
    if (this.json !== undefined) {
      const json = this.json + this.text.flush();
      const content = finish === "stop" ? jsonContent(json) : json.replace(/\n+$/, "");
      return { pieces: content === "" ? [] : [{ type: "delta", text: content }], finish };
    }
    const rest = this.stream.stopped ? [] : this.stream.push(this.text.flush());
    const pieces = [...rest, ...this.stream.end()].filter((p) => !beyondCalls(p));
    const stopped = this.stream.stopped ? "stop" : finish;
    return { pieces, finish: stopped === "stop" && this.stream.started > 0 ? "tool_calls" : stopped };
  }
}
