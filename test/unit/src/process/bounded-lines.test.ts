// src/process/bounded-lines.ts: newline-delimited input read line by line, never holding more than the bound, however
// the chunks fall (the rescorer's jobs on stdin, issue 43).
import { describe, expect, it } from "vitest";
import { boundedLines, type BoundedLine } from "../../../../src/process/bounded-lines.ts";

async function lines(chunks: (string | Uint8Array)[], max: number): Promise<BoundedLine[]> {
  const out: BoundedLine[] = [];
  for await (const line of boundedLines((async function* () { yield* chunks; })(), max)) out.push(line);
  return out;
}

describe("boundedLines", () => {
  it("splits on newlines whatever the chunks, a last line without one included, multi-byte characters across chunks whole", async () => {
    const text = Buffer.from("ab\nc✓d\n\nlast");
    const split = [text.subarray(0, 1), text.subarray(1, 5), text.subarray(5, 6), text.subarray(6)];
    expect(await lines(split, 100)).toEqual([{ text: "ab" }, { text: "c✓d" }, { text: "" }, { text: "last" }]);
  });

  it("a line past the bound is reported by its length and skipped to its end; the next line is read", async () => {
    expect(await lines(["12345", "6789\nok\n", "123456789"], 8)).toEqual([{ tooLong: 9 }, { text: "ok" }, { tooLong: 9 }]);
    expect(await lines(["12345678\n"], 8)).toEqual([{ text: "12345678" }]);
  });
});
