// DESIGN §8, a session as its messages arrive (gateway/directory/live-session.ts): counted and timed on arrival,
// so a caller who reads slowly changes neither what the provider may send nor how long it may take.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LiveSession } from "../../../../gateway/directory/live-session.ts";
import { HELD_BYTES_PER_MESSAGE, HeldLedger, type Cut } from "../../../../gateway/directory/held-bytes.ts";
import { ApiError } from "../../../../src/errors.ts";
import { CallerGone } from "../../../../gateway/http/caller-gone.ts";

const deadlines = { firstTokenMs: 1_000, idleMs: 200, totalMs: 5_000 };
const frame = (data: string) => ({ t: "frame" as const, id: "s_test0001", data });
const started = { t: "started" as const, id: "s_test0001" };

function session(wireBytes = 1_000, ledger = new HeldLedger(), whole = false) {
  const cancels: number[] = [];
  const cuts: { cut: Cut; gone?: string }[] = [];
  const live = new LiveSession(wireBytes, deadlines, () => cancels.push(1), ledger, whole, (cut, gone) => cuts.push({ cut, ...(gone ? { gone: gone.code } : {}) }));
  return { live, cancels, cuts };
}

describe("DESIGN §8 A session's bounds, on arrival", () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("frames nobody has read yet count against the wire budget: past it the provider is cancelled once and the backlog dropped", async () => {
    const { live, cancels } = session(100);
    live.arrive(started);
    live.arrive(frame("x".repeat(60)));
    live.arrive(frame("x".repeat(60)));
    live.arrive(frame("x".repeat(60)));
    expect(live.breach).toEqual({ kind: "answer_bounds", why: "sent more than its answer's bounds allow" });
    expect(cancels).toHaveLength(1);
    await expect(live.take(new AbortController().signal)).rejects.toThrow("the session broke its bounds");
  });

  it("no deadline runs while the session is queued", () => {
    const { live } = session();
    vi.advanceTimersByTime(60_000);
    expect(live.breach).toBeUndefined();
  });

  it("the first token is due firstTokenMs after the provider starts the session", () => {
    const { live, cancels } = session();
    live.arrive(started);
    vi.advanceTimersByTime(999);
    expect(live.breach).toBeUndefined();
    vi.advanceTimersByTime(1);
    expect(live.breach).toEqual({ kind: "deadline", why: "sent no token within 1 s of starting the session" });
    expect(cancels).toHaveLength(1);
  });

  it("after the first frame each gap may last idleMs, and frames that keep coming still meet the total", () => {
    const { live } = session(1_000_000);
    live.arrive(started);
    live.arrive(frame("a"));
    vi.advanceTimersByTime(150);
    live.arrive(frame("b"));
    vi.advanceTimersByTime(150);
    expect(live.breach).toBeUndefined();
    vi.advanceTimersByTime(50);
    expect(live.breach?.why).toBe("sent nothing for 0.2 s mid-session");

    const steady = session(1_000_000);
    steady.live.arrive(started);
    for (let t = 0; t < 5_000 && steady.live.breach === undefined; t += 100) {
      steady.live.arrive(frame("a"));
      vi.advanceTimersByTime(100);
    }
    expect(steady.live.breach?.why).toBe("did not finish within 5 s of starting the session");
  });

  it("the session's end stops its deadlines", () => {
    const { live } = session();
    live.arrive(started);
    live.arrive({ t: "end", id: "s_test0001" });
    vi.advanceTimersByTime(10_000);
    expect(live.breach).toBeUndefined();
  });
});

describe("Issue 41: what a session holds, unread and kept", () => {
  const signal = new AbortController().signal;
  const x100 = "x".repeat(100);
  const held = x100.length + HELD_BYTES_PER_MESSAGE;

  it("frames count while unread and stop counting once taken; past the session's unread bound its caller is let go: the provider stopped, nothing charged, the backlog dropped", async () => {
    const ledger = new HeldLedger({ unreadPerSession: 3 * held, total: 1_000_000 });
    const { live, cancels, cuts } = session(1_000_000, ledger);
    live.arrive(started);
    live.arrive(frame(x100));
    live.arrive(frame(x100));
    expect(ledger.bytes).toBe(2 * held);
    await live.take(signal);
    expect(ledger.bytes).toBe(held);
    live.arrive(frame(x100));
    live.arrive(frame(x100));
    expect(cuts).toEqual([]);
    live.arrive(frame(x100));
    expect(cuts).toEqual([{ cut: { bound: "unread", unread: 4 * held, kept: 0 }, gone: "caller_too_slow" }]);
    expect([live.cut?.bound, live.breach, cancels.length, ledger.bytes]).toEqual(["unread", undefined, 1, 0]);
    const error = await live.take(signal).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(CallerGone);
    expect((error as CallerGone).code).toBe("caller_too_slow");
    // what comes after is dropped, and counted nowhere
    live.arrive(frame(x100));
    expect([ledger.bytes, cancels.length, cuts.length]).toEqual([0, 1, 1]);
  });

  it("a caller who keeps up never reaches the unread bound, however long the answer", async () => {
    const ledger = new HeldLedger({ unreadPerSession: 2 * held, total: 1_000_000_000 });
    const { live, cuts } = session(100_000_000, ledger);
    live.arrive(started);
    for (let i = 0; i < 10_000; i++) {
      live.arrive(frame(x100));
      await live.take(signal);
    }
    expect([cuts.length, ledger.bytes]).toEqual([0, 0]);
  });

  it("the answer passed on is kept in the count until the session closes; holding the most past the total ends a stream's connection, and a whole answer in 503 overloaded", async () => {
    for (const whole of [false, true]) {
      const ledger = new HeldLedger({ unreadPerSession: 1_000_000, total: 250 });
      const { live, cancels, cuts } = session(1_000_000, ledger, whole);
      live.arrive(started);
      live.keep({ type: "delta", text: "é".repeat(100) });
      expect(ledger.bytes).toBe(200);
      live.keep({ type: "tool_call", index: 0, id: "call_1", name: "lookup" });
      expect(ledger.bytes).toBe(212);
      live.keep({ type: "delta", text: x100 });
      expect(cuts).toEqual([{ cut: { bound: "total", unread: 0, kept: 312 }, ...(whole ? {} : { gone: "overloaded" }) }]);
      expect([cancels.length, ledger.bytes]).toEqual([1, 0]);
      const error = await live.take(signal).catch((err: unknown) => err);
      if (whole) expect([error instanceof ApiError, (error as ApiError).code]).toEqual([true, "overloaded"]);
      else expect([error instanceof CallerGone, (error as CallerGone).code]).toEqual([true, "overloaded"]);
    }
  });

  it("the session's end leaves its backlog counted until it is read or the session is closed", () => {
    const ledger = new HeldLedger();
    const { live } = session(1_000_000, ledger);
    live.arrive(started);
    live.arrive(frame(x100));
    live.arrive({ t: "end", id: "s_test0001" });
    expect(ledger.bytes).toBe(held + HELD_BYTES_PER_MESSAGE);
    live.close();
    expect(ledger.bytes).toBe(0);
  });
});
