// DESIGN §8, a session as its messages arrive (gateway/directory/live-session.ts): counted and timed on arrival,
// so a caller who reads slowly changes neither what the provider may send nor how long it may take.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LiveSession } from "../../../../gateway/directory/live-session.ts";

const deadlines = { firstTokenMs: 1_000, idleMs: 200, totalMs: 5_000 };
const frame = (data: string) => ({ t: "frame" as const, id: "s_test0001", data });
const started = { t: "started" as const, id: "s_test0001" };

function session(wireBytes = 1_000) {
  const cancels: number[] = [];
  const live = new LiveSession(wireBytes, deadlines, () => cancels.push(1));
  return { live, cancels };
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
    await expect(live.box.take(new AbortController().signal)).rejects.toThrow("the session broke its bounds");
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
