// Issue 41, what the gateway holds for its sessions (gateway/directory/held-bytes.ts): unread bytes within a bound
// per session, unread and kept together within one over all sessions, and past the total the session holding the most
// is the one cut.
import { describe, expect, it } from "vitest";
import { HeldLedger, type Cut } from "../../../../gateway/directory/held-bytes.ts";

function ledgerOf(unreadPerSession: number, total: number) {
  const ledger = new HeldLedger({ unreadPerSession, total });
  const cuts: ({ name: string } & Cut)[] = [];
  const open = (name: string) => ledger.open((cut) => cuts.push({ name, ...cut }));
  return { ledger, cuts, open };
}

describe("Issue 41: bytes held, per session and in total", () => {
  it("a session past its unread bound is cut, with what it held, and the ledger no longer counts it", () => {
    const { ledger, cuts, open } = ledgerOf(100, 1_000);
    const a = open("a");
    const b = open("b");
    a.arrived(60);
    b.arrived(30);
    a.keep(500);
    a.arrived(40);
    expect(cuts).toEqual([]);
    a.arrived(1);
    expect(cuts).toEqual([{ name: "a", bound: "unread", unread: 101, kept: 500 }]);
    expect([ledger.bytes, a.bytes, a.cut?.bound]).toEqual([30, 0, "unread"]);
    // a cut session counts nothing more
    a.arrived(500);
    a.keep(500);
    a.taken(10);
    expect(ledger.bytes).toBe(30);
  });

  it("what the caller took, or kept answer text, never counts against the unread bound", () => {
    const { cuts, open } = ledgerOf(100, 1_000_000);
    const a = open("a");
    for (let i = 0; i < 1_000; i++) {
      a.arrived(90);
      a.taken(90);
      a.keep(90);
    }
    expect(cuts).toEqual([]);
    expect(a.bytes).toBe(90_000);
  });

  it("past the total the session holding the most, unread and kept together, is cut, whichever one's bytes crossed it", () => {
    const { ledger, cuts, open } = ledgerOf(100, 250);
    const [a, b, c] = ["a", "b", "c"].map(open) as [ReturnType<typeof open>, ReturnType<typeof open>, ReturnType<typeof open>];
    a.arrived(90);
    b.arrived(50);
    c.arrived(40);
    c.keep(59);
    expect(cuts).toEqual([]);
    b.arrived(20);
    expect(cuts).toEqual([{ name: "c", bound: "total", unread: 40, kept: 59 }]);
    expect(ledger.bytes).toBe(160);
  });

  it("what the caller takes, or a session that ends, makes room", () => {
    const { ledger, cuts, open } = ledgerOf(100, 150);
    const a = open("a");
    const b = open("b");
    a.arrived(100);
    a.taken(60);
    b.arrived(100);
    expect([ledger.bytes, cuts.length]).toEqual([140, 0]);
    a.close();
    expect(ledger.bytes).toBe(100);
    // a closed session counts nothing more
    a.arrived(10);
    a.keep(10);
    expect(ledger.bytes).toBe(100);
    const c = open("c");
    c.arrived(50);
    expect(cuts).toEqual([]);
    c.arrived(1);
    expect(cuts).toEqual([{ name: "b", bound: "total", unread: 100, kept: 0 }]);
  });

  it("a total below one session's unread bound still holds: sessions are cut until it is met", () => {
    const { ledger, cuts, open } = ledgerOf(1_000, 100);
    const a = open("a");
    const b = open("b");
    a.arrived(60);
    b.arrived(50);
    expect(cuts.map((c) => c.name)).toEqual(["a"]);
    expect(ledger.bytes).toBe(50);
  });
});
