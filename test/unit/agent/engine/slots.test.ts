// DESIGN §5 "a provider runs one session at a time; the rest wait in FIFO order": the engine's lock.
import { describe, expect, it } from "vitest";
import { Slots } from "../../../../agent/engine/slots.ts";

describe("one session at a time", () => {
  it("grants turns in arrival order", async () => {
    const lock = new Slots();
    const order: number[] = [];
    const first = await lock.acquire();
    const waiting = [1, 2, 3].map((n) => lock.acquire().then((release) => (order.push(n), release)));
    expect(lock.busy).toBe(true);
    expect(lock.waiting).toBe(3);
    first();
    for (const w of waiting) (await w)();
    expect(order).toEqual([1, 2, 3]);
    expect(lock.busy).toBe(false);
  });

  it("a waiter whose signal aborts leaves the line at once", async () => {
    const lock = new Slots();
    const release = await lock.acquire();
    const controller = new AbortController();
    const leaving = lock.acquire(controller.signal);
    const staying = lock.acquire();
    controller.abort(new Error("hung up"));
    await expect(leaving).rejects.toThrow("hung up");
    expect(lock.waiting).toBe(1);
    release();
    (await staying)();
    expect(lock.busy).toBe(false);
  });

  it("an already aborted signal never takes a turn, and releasing twice frees only once", async () => {
    const lock = new Slots();
    await expect(lock.acquire(AbortSignal.abort(new Error("late")))).rejects.toThrow("late");
    const release = await lock.acquire();
    const next = lock.acquire();
    release();
    release();
    const releaseNext = await next;
    expect(lock.busy).toBe(true);
    releaseNext();
    expect(lock.busy).toBe(false);
  });

  it("with a capacity of N, N hold at once and the next waits for a release", async () => {
    const slots = new Slots(2);
    const a = await slots.acquire();
    await slots.acquire();
    let third = false;
    const waiting = slots.acquire().then((release) => {
      third = true;
      return release;
    });
    await Promise.resolve();
    expect(third).toBe(false);
    expect(slots.waiting).toBe(1);
    a();
    (await waiting)();
    expect(third).toBe(true);
  });
});
