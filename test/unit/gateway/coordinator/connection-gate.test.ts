// The coordinator port's gate and its log (docs/operator-guide.md "The coordinator port"), on fake sockets:
// pending connections are capped in total and per address, over a cap a connection is answered 503 and closed,
// a proven one stops counting, and connection events are one line per interval.
import { EventEmitter } from "node:events";
import type { Socket } from "node:net";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { ConnectionGate } from "../../../../gateway/coordinator/connection-gate.ts";
import { ConnectionLog, DETAIL_LINES_PER_INTERVAL } from "../../../../gateway/coordinator/connection-log.ts";

/** A socket as far as the gate touches it: its address, end/destroy, and the close event. */
class FakeSocket extends EventEmitter {
  written = "";
  destroyed = false;
  constructor(readonly remoteAddress: string) {
    super();
  }
  end(data: string, done: () => void) {
    this.written += data;
    done();
  }
  destroy() {
    this.destroyed = true;
    this.emit("close");
  }
}

function setup(limits = { handshakeMs: 3_600_000, maxPending: 4, maxPendingPerAddress: 2 }) {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ base: undefined, timestamp: false }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  // driven by hand: the interval is an hour, so only `flush` writes the summary
  const log: ConnectionLog = new ConnectionLog(logger, () => gate.size, 3_600_000);
  const gate = new ConnectionGate(limits, log);
  return { gate, lines, log };
}

const sock = (address: string) => new FakeSocket(address) as unknown as Socket & FakeSocket;

describe("Links and secrets: the coordinator port's gate", () => {
  it("pending connections are capped per address (IPv6 by /64) and in total; over a cap: 503 and closed", () => {
    const { gate } = setup();
    const a = [sock("192.0.2.1"), sock("::ffff:192.0.2.1")];
    for (const s of a) gate.admit(s);
    const third = sock("192.0.2.1");
    gate.admit(third);
    expect(third.written).toMatch(/^HTTP\/1\.1 503 Service Unavailable\r\n/);
    expect(third.destroyed).toBe(true);
    const v6 = [sock("2001:db8:1:2::1"), sock("2001:db8:1:2::ff")];
    for (const s of v6) gate.admit(s);
    expect(v6.every((s) => !s.destroyed)).toBe(true);
    const beyondTotal = sock("198.51.100.7");
    gate.admit(beyondTotal);
    expect(beyondTotal.destroyed).toBe(true);
    expect(gate.size).toBe(4);
  });

  it("a proven connection stops counting against the caps; a closed one frees its place", () => {
    const { gate } = setup();
    const [a, b] = [sock("192.0.2.1"), sock("192.0.2.1")];
    gate.admit(a);
    gate.admit(b);
    gate.proven(a);
    b.destroy();
    const [c, d] = [sock("192.0.2.1"), sock("192.0.2.1")];
    gate.admit(c);
    gate.admit(d);
    expect([c.destroyed, d.destroyed, gate.size]).toEqual([false, false, 2]);
  });

  it("one line per interval with the counts; a few detail lines, the rest counted as suppressed", () => {
    const { gate, lines, log } = setup();
    gate.admit(sock("192.0.2.1"));
    gate.admit(sock("192.0.2.1"));
    gate.admit(sock("192.0.2.1")); // over the cap
    for (let i = 0; i < DETAIL_LINES_PER_INTERVAL + 5; i++) log.detail({ agent: `192.0.2.1:${i}`, reason: "bad token" }, "agent refused");
    log.flush();
    expect(lines.filter((l) => l.msg === "agent refused")).toHaveLength(DETAIL_LINES_PER_INTERVAL);
    expect(lines.at(-1)).toMatchObject({
      msg: "coordinator connections", opened: 2, over_cap: 1, proven: 0, timed_out: 0, closed_unproven: 0, lines_suppressed: 5, pending: 2,
    });
    // a quiet interval writes nothing
    const before = lines.length;
    log.flush();
    expect(lines.length).toBe(before);
  });
});
