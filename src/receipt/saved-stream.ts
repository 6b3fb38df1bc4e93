// Rebuilds an answer from a saved SSE transcript the way a gateway writes it (SPEC §3), strictly: every chunk has
// the closed shape of saved-shapes.ts and its place in the sequence (role chunk first, one stop chunk carrying
// the receipt, then `data: [DONE]`), and tool-call deltas follow OpenAI's rule. A transcript that breaks any of
// it has no answer the receipt can vouch for. Portable: part of the verifier in src/receipt/index.ts.
import { createParser } from "eventsource-parser";
import { AnswerRecord } from "./answer-record.ts";
import { describeError, firstChoice, isObject, parseJson, type Json } from "./saved-json.ts";
import { ChunkSchema, readShape, stopFieldsProblem, type CallDelta, type Chunk } from "./saved-shapes.ts";
import type { SavedResponse } from "./types.ts";

export function fromStream(text: string): SavedResponse {
  const data: string[] = [];
  const parser = createParser({ onEvent: (event) => data.push(event.data) });
  // a transcript cut before its final blank line still has its last event read
  parser.feed(`${text}\n\n`);
  const problems: string[] = [];
  // one line per kind of fault, however many chunks repeat it
  const note = (problem: string) => void (problems.includes(problem) || problems.push(problem));
  const rebuild = new Rebuild();
  let stop: Json | undefined;
  let done = false;
  for (const [i, raw] of data.entries()) {
    if (raw === "[DONE]") {
      if (done || i !== data.length - 1) note("events follow data: [DONE]");
      done = true;
      continue;
    }
    const chunk = parseJson(raw, `event ${i + 1}`, `event ${i + 1} is not JSON`);
    if (!isObject(chunk)) throw new Error(`event ${i + 1} is not a JSON object`);
    if ("error" in chunk) {
      note(`the stream failed (${describeError(chunk.error)}); a failed stream has no receipt`);
      continue;
    }
    if (stop) note("a chunk follows the stop chunk");
    if ("svc_receipt" in chunk) stop = chunk;
    const problem = rebuild.add(chunk);
    if (problem !== undefined) problems.push(`event ${i + 1}: ${problem}`);
  }
  if (!stop) problems.push("no chunk carries svc_receipt");
  else if (!done) problems.push("the transcript ends without data: [DONE]");
  const choice = stop ? firstChoice(stop) : {};
  const answer = rebuild.broken ? {} : { content: rebuild.answer.content, toolCalls: rebuild.answer.toolCalls, reasoning: rebuild.answer.reasoning, logprobs: rebuild.shownLogprobs ? rebuild.answer.logprobs : undefined };
  return {
    kind: "stream",
    receipt: stop?.svc_receipt,
    ...answer,
    usage: stop?.usage,
    finishReason: typeof choice.finish_reason === "string" ? choice.finish_reason : null,
    problems,
  };
}

/** The answer so far; `broken` once a chunk did not fit, after which the answer is not read. */
class Rebuild {
  readonly answer = new AnswerRecord();
  broken = false;
  /** Whether any chunk showed logprobs; none means not shown (a complete request's receipt commits to them all the same). */
  shownLogprobs = false;
  private first: Chunk | undefined;

  /** Takes one chunk; returns what is wrong with it, if anything. After the first fault, chunks are not read. */
  add(raw: Json): string | undefined {
    if (this.broken) return undefined;
    const read = readShape(ChunkSchema, raw);
    const problem = read.problem ?? this.sequenceProblem(read.data!, "svc_receipt" in raw) ?? this.take(read.data!);
    if (problem !== undefined) this.broken = true;
    return problem;
  }

  private sequenceProblem(chunk: Chunk, isStop: boolean): string | undefined {
    const { delta, finish_reason } = chunk.choices[0];
    const first = this.first ?? (this.first = chunk);
    if (chunk.id !== first.id || chunk.created !== first.created || chunk.model !== first.model) return "id, created or model differs from the first chunk's";
    const { logprobs } = chunk.choices[0];
    if (chunk === first) {
      // SPEC §3 step 1: the role chunk, which holds no answer
      return delta.role === undefined || delta.content !== "" || Object.keys(delta).length !== 2 || logprobs !== undefined ? 'the first chunk is not the role chunk (delta {role: "assistant", content: ""})' : undefined;
    }
    if (delta.role !== undefined) return "delta.role after the first chunk";
    if (!isStop) {
      if (finish_reason !== null) return "a finish_reason on a chunk without svc_receipt";
      // an empty delta only carries the logprobs of tokens after the last text (a stop sequence's)
      return stopFieldsProblem(chunk, false) ?? (Object.keys(delta).length === 0 && logprobs === undefined ? "an empty delta before the stop chunk" : undefined);
    }
    if (finish_reason === null) return "the stop chunk has no finish_reason";
    if (chunk.usage === undefined) return "the stop chunk has no usage";
    if (Object.keys(delta).length > 0 || logprobs !== undefined) return "the stop chunk carries a delta or logprobs";
    return stopFieldsProblem(chunk, true);
  }

  private take(chunk: Chunk): string | undefined {
    const { delta, logprobs } = chunk.choices[0];
    // the logprobs come before the text they made, as the gateway received them
    if (logprobs !== undefined) {
      this.shownLogprobs = true;
      this.answer.add({ type: "logprobs", logprobs: logprobs.content });
    }
    if (delta.content !== undefined) this.answer.add({ type: "delta", text: delta.content });
    if (delta.reasoning_content !== undefined) this.answer.add({ type: "reasoning", text: delta.reasoning_content });
    for (const call of delta.tool_calls ?? []) {
      const problem = this.takeCall(call);
      if (problem !== undefined) return `delta.tool_calls: ${problem}`;
    }
    return undefined;
  }

  /** OpenAI's rule: a delta with an id begins the call at its index; one without continues that call. */
  private takeCall(delta: CallDelta): string | undefined {
    try {
      if ("id" in delta) this.answer.add({ type: "tool_call", index: delta.index, id: delta.id, name: delta.function.name });
      else {
        const call = this.answer.toolCalls[delta.index];
        if (call === undefined) return `a delta continues tool call ${delta.index}, which has not begun`;
        const name = delta.function.name;
        if (name !== undefined && name !== call.function.name) return `tool call ${delta.index} changes its name from ${call.function.name} to ${name}`;
      }
      if (delta.function.arguments !== "") this.answer.add({ type: "tool_args", index: delta.index, text: delta.function.arguments });
      return undefined;
    } catch (err) {
      return (err as Error).message;
    }
  }
}
