// Fewer sealed frames (agent/daemon/frame-batcher.ts): pieces of one tick go out together; a non-stream answer rides
// with its receipt; a burst too large for one frame goes out at once. A unit: frames are collected, not sealed.
import { describe, expect, it } from "vitest";
import { FrameBatcher, MAX_BATCH_CHARS, MAX_HOLD_MS } from "../../../../agent/daemon/frame-batcher.ts";
import type { SessionFrame } from "../../../../src/session/sealed-request.ts";

const done: Extract<SessionFrame, { type: "done" }> = { type: "done", receipt: { r: 1 }, first_token_ms: 1 };
const delta = (text: string) => ({ type: "delta" as const, text });
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("DESIGN §5 session frames, batched", () => {
  it("a stream: pieces of the same tick are one frame, a lone piece is itself, the done frame comes last", async () => {
    const sent: SessionFrame[] = [];
    const batch = new FrameBatcher((f) => sent.push(f), false);
    batch.push(delta("a"));
    batch.push({ type: "tool_call", index: 0, id: "c", name: "f" });
    expect(sent).toEqual([]);
    await tick();
    expect(sent).toEqual([{ type: "pieces", pieces: [delta("a"), { type: "tool_call", index: 0, id: "c", name: "f" }] }]);
    batch.push(delta("b"));
    await tick();
    batch.push(delta("c"));
    batch.done(done);
    expect(sent.slice(1)).toEqual([delta("b"), delta("c"), done]);
  });

  it("whole: everything rides in the done frame; nothing goes out before it", async () => {
    const sent: SessionFrame[] = [];
    const batch = new FrameBatcher((f) => sent.push(f), true);
    batch.push(delta("a"));
    batch.push(delta("b"));
    await tick();
    expect(sent).toEqual([]);
    batch.done(done);
    expect(sent).toEqual([{ ...done, pieces: [delta("a"), delta("b")] }]);
    const empty: SessionFrame[] = [];
    new FrameBatcher((f) => empty.push(f), true).done(done);
    expect(empty).toEqual([done]);
  });

  it("a burst past the size bound goes out at once, even for a whole answer", () => {
    const sent: SessionFrame[] = [];
    const batch = new FrameBatcher((f) => sent.push(f), true);
    batch.push(delta("x".repeat(MAX_BATCH_CHARS / 2)));
    expect(sent).toEqual([]);
    batch.push(delta("y".repeat(MAX_BATCH_CHARS / 2)));
    expect(sent).toHaveLength(1);
    expect(sent[0]!.type).toBe("pieces");
  });

  it("whole: pieces held MAX_HOLD_MS go out with the next one, so a long answer still shows it is working", () => {
    let clock = 0;
    const sent: SessionFrame[] = [];
    const batch = new FrameBatcher((f) => sent.push(f), true, () => clock);
    batch.push(delta("a"));
    clock = MAX_HOLD_MS - 1;
    batch.push(delta("b"));
    expect(sent).toEqual([]);
    clock = MAX_HOLD_MS;
    batch.push(delta("c"));
    expect(sent).toEqual([{ type: "pieces", pieces: [delta("a"), delta("b"), delta("c")] }]);
    clock += MAX_HOLD_MS - 1;
    batch.push(delta("d"));
    batch.done(done);
    expect(sent.slice(1)).toEqual([{ ...done, pieces: [delta("d")] }]);
  });

  it("a cancelled session sends nothing it held", async () => {
    const sent: SessionFrame[] = [];
    const batch = new FrameBatcher((f) => sent.push(f), false);
    batch.push(delta("a"));
    batch.drop();
    await tick();
    expect(sent).toEqual([]);
  });
});
