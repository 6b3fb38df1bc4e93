// DESIGN §7 NatsFabric's asks: "no responders" is asked once more after a pause before a ping or a placement takes it
// as proof, since a live coordinator between NATS nodes answers none. A unit against a scripted connection.
import { NoRespondersError, TimeoutError, type Msg } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { askTwice, isNoResponders, NoLongerAsked } from "../../../../gateway/fabric/nats-ask.ts";

const reply = { subject: "svc.g.x" } as Msg;
const OPTIONS = { timeout: 1_000 };

/** A connection whose requests answer, in turn, what `answers` holds: a reply, or an error to reject with. */
function scripted(...answers: (Msg | Error)[]) {
  const asked: string[] = [];
  const nc = {
    request: (subject: string) => {
      asked.push(subject);
      const answer = answers.shift();
      if (answer === undefined) throw new Error("asked more often than the script says");
      return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
    },
  };
  return { nc, asked };
}

describe("DESIGN §7 NatsFabric: no responders is asked once more", () => {
  it("a reply the first time is the answer, with no second ask and no recheck", async () => {
    const { nc, asked } = scripted(reply);
    let rechecked = 0;
    await expect(askTwice(nc, "svc.c.a", "", OPTIONS, () => true, () => rechecked++)).resolves.toBe(reply);
    expect(asked).toEqual(["svc.c.a"]);
    expect(rechecked).toBe(0);
  });

  it("no responders, then a reply: asked twice, the recheck told, and the reply is the answer", async () => {
    const { nc, asked } = scripted(new NoRespondersError("svc.c.a"), reply);
    let rechecked = 0;
    await expect(askTwice(nc, "svc.c.a", "", OPTIONS, () => true, () => rechecked++)).resolves.toBe(reply);
    expect(asked).toEqual(["svc.c.a", "svc.c.a"]);
    expect(rechecked).toBe(1);
  });

  it("no responders twice: rejects with no responders, the proof the callers act on", async () => {
    const { nc, asked } = scripted(new NoRespondersError("svc.p.x"), new NoRespondersError("svc.p.x"));
    const err = await askTwice(nc, "svc.p.x", "{}", OPTIONS, () => true).catch((e: unknown) => e);
    expect(isNoResponders(err)).toBe(true);
    expect(asked).toHaveLength(2);
  });

  it("no responders wrapped as a cause (a traced request) counts as no responders", async () => {
    const { nc, asked } = scripted(new Error("request failed", { cause: new NoRespondersError("svc.p.x") }), reply);
    await expect(askTwice(nc, "svc.p.x", "{}", OPTIONS, () => true)).resolves.toBe(reply);
    expect(asked).toHaveLength(2);
  });

  it("any other failure rejects at once, unasked again", async () => {
    const timeout = new TimeoutError();
    const { nc, asked } = scripted(timeout);
    let rechecked = 0;
    await expect(askTwice(nc, "svc.p.x", "{}", OPTIONS, () => true, () => rechecked++)).rejects.toBe(timeout);
    expect(asked).toHaveLength(1);
    expect(rechecked).toBe(0);
  });

  it("no responders, and by the recheck it no longer matters (the gateway is down, the session gone): NoLongerAsked, no second ask", async () => {
    const { nc, asked } = scripted(new NoRespondersError("svc.p.x"));
    const err = await askTwice(nc, "svc.p.x", "{}", OPTIONS, () => false).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NoLongerAsked);
    expect(isNoResponders(err)).toBe(false);
    expect(asked).toHaveLength(1);
  });
});
