// `stop` on a stream (SPEC §2.1, §3): the agent's hold-back buffer, fed text piece by piece as the decoder
// releases it. Whatever the split, the deltas joined are the text before the first stop, and no delta ever
// carries a byte of a stop that later completes.
import { describe, expect, it } from "vitest";
import { StopBuffer } from "../../../../../agent/engine/answer/stop-buffer.ts";

/** Feeds the pieces in order; what was sent, delta by delta, and whether a stop ended it. */
function run(stops: string[], pieces: string[]) {
  const buffer = new StopBuffer(stops);
  const deltas: string[] = [];
  for (const piece of pieces) {
    const step = buffer.push(piece);
    if (step.text !== "") deltas.push(step.text);
    if (step.stopped) return { deltas, text: deltas.join(""), stopped: true };
  }
  const rest = buffer.flush();
  if (rest !== "") deltas.push(rest);
  return { deltas, text: deltas.join(""), stopped: false };
}

/** Every way to cut `text` into pieces of 1 to 3 UTF-16 units (small texts only). */
function* splits(text: string): Generator<string[]> {
  if (text === "") return yield [];
  for (let n = 1; n <= Math.min(3, text.length); n++) {
    for (const rest of splits(text.slice(n))) yield [text.slice(0, n), ...rest];
  }
}

describe("§2.1 stop: the hold-back buffer", () => {
  it("ends before a stop that arrives inside one piece; the stop and what follows are not returned", () => {
    expect(run(["END"], ["one ENDtwo"])).toEqual({ deltas: ["one "], text: "one ", stopped: true });
  });

  it("ends before a stop spread over several pieces, whatever the split, and never sends part of it early", () => {
    const stop = "</s>";
    for (const pieces of splits("ab</s>cd")) {
      const { deltas, text, stopped } = run([stop], pieces);
      expect([text, stopped], pieces.join("|")).toEqual(["ab", true]);
      for (const delta of deltas) expect(delta).not.toMatch(/[<\/s>]/);
    }
  });

  it("releases held text as soon as it can no longer become a stop", () => {
    const buffer = new StopBuffer(["abc"]);
    expect(buffer.push("xa")).toEqual({ text: "x", stopped: false });
    expect(buffer.push("b")).toEqual({ text: "", stopped: false });
    expect(buffer.push("x")).toEqual({ text: "abx", stopped: false });
  });

  it("keeps the longest held end that could begin a stop, so an overlapping restart is not lost", () => {
    // "aab": the held "aa" fails at the second "a", but "ab" may still come
    expect(run(["aab"], ["a", "a", "a", "b", "!"])).toEqual({ deltas: ["a"], text: "a", stopped: true });
  });

  it("several stops: the first one completed ends the answer, cut where it begins", () => {
    expect(run(["\n\n", "User:"], ["Hi", " there", "\n", "User", ":", " more"]).text).toBe("Hi there\n");
    expect(run(["\n\n", "User:"], ["Hi", "\n", "\nUser:"]).text).toBe("Hi");
    // both complete in the same piece: the earlier one wins
    expect(run(["bc", "xab"], ["x", "abc"]).text).toBe("");
  });

  it("a stop that is a prefix of another ends at the shorter one", () => {
    expect(run(["ab", "abc"], ["a", "b", "c"])).toEqual({ deltas: [], text: "", stopped: true });
  });

  it("multi-byte characters: stops with accents, CJK and emoji match whole characters and nothing leaks", () => {
    const text = "naïve 日本語 😀 end";
    for (const stop of ["日本", "😀", "ïve", " end"]) {
      for (const pieces of [[...text], text.split(/(?= )/), [text]]) {
        const { deltas, text: sent, stopped } = run([stop], pieces);
        expect([sent, stopped]).toEqual([text.slice(0, text.indexOf(stop)), true]);
        // no delta ends in the first half of a surrogate pair
        for (const delta of deltas) expect(delta).not.toMatch(/[\ud800-\udbff]$/);
      }
    }
  });

  it("a stop sharing only the high surrogate of an emoji does not hold or cut the other emoji", () => {
    // 😀 and 😁 share their first UTF-16 unit; only whole characters ever arrive, so 😀 is never half-matched
    expect(run(["😁"], ["a😀", "b"])).toEqual({ deltas: ["a😀", "b"], text: "a😀b", stopped: false });
  });

  it("with no stop in the answer, the end flushes what was held and the text is whole", () => {
    expect(run(["STOP"], ["a S", "T", "O"])).toEqual({ deltas: ["a ", "STO"], text: "a STO", stopped: false });
    expect(run(["STOP"], ["plain"])).toEqual({ deltas: ["plain"], text: "plain", stopped: false });
  });

  it("empty pieces (a character still being decoded) change nothing", () => {
    const buffer = new StopBuffer(["xy"]);
    expect(buffer.push("ax")).toEqual({ text: "a", stopped: false });
    expect(buffer.push("")).toEqual({ text: "", stopped: false });
    expect(buffer.push("y")).toEqual({ text: "", stopped: true });
  });
});
