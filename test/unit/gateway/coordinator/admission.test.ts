// Issue 41, who may join (gateway/coordinator/admission.ts) as the registry holds it: one enrollment admits one
// identity at a time, and what each provider's enrollment is when it has no token.
import { describe, expect, it } from "vitest";
import { enrollmentInUse, enrollmentRef } from "../../../../gateway/coordinator/admission.ts";
import { Registry, type AgentPort } from "../../../../gateway/coordinator/registry.ts";

const hex = (c: string) => c.repeat(64);
const port = (): AgentPort => ({ send: () => undefined, close: () => undefined });

describe("Issue 41: one enrollment, one identity at a time", () => {
  it("an agent's enrollment is its token's id; without a token, its device at the hardware rung; else only its own key", () => {
    expect(enrollmentRef(hex("a"), { id: "ptk_1", name: "mac" }, "C02XYZ")).toBe("ptk_1");
    expect(enrollmentRef(hex("a"), undefined, "C02XYZ")).toBe("serial:C02XYZ");
    expect(enrollmentRef(hex("a"), undefined, undefined)).toBe(`provider:${hex("a")}`);
  });

  it("a second identity is refused while the first holds the enrollment; the same identity reconnecting, or any once it has gone, is not", () => {
    const registry = new Registry(new Set(["qwen3-4b"]));
    registry.add({ id: hex("a"), trust: "process", enrollment: "ptk_1", signingKey: hex("1"), sealingKey: hex("2"), evidence: hex("3") }, port());
    expect(registry.holderOf("ptk_1")).toBe(hex("a"));
    expect(enrollmentInUse("ptk_1", registry.holderOf("ptk_1"), hex("b"))).toBe(
      `enrollment ptk_1 is in use by provider ${hex("a")}, and one enrollment admits one machine at a time; enroll this machine with a token of its own (svc-gateway providers enroll)`,
    );
    expect(enrollmentInUse("ptk_1", registry.holderOf("ptk_1"), hex("a"))).toBeUndefined();
    expect(enrollmentInUse("ptk_2", registry.holderOf("ptk_2"), hex("b"))).toBeUndefined();
    // the same keys on a new connection replace the old one, and still hold the enrollment
    registry.add({ id: hex("a"), trust: "process", enrollment: "ptk_1", signingKey: hex("1"), sealingKey: hex("2"), evidence: hex("3") }, port());
    expect(registry.holderOf("ptk_1")).toBe(hex("a"));
    registry.remove(hex("a"), "the provider disconnected");
    expect(registry.holderOf("ptk_1")).toBeUndefined();
    expect(enrollmentInUse("ptk_1", registry.holderOf("ptk_1"), hex("b"))).toBeUndefined();
  });

  it("the gateways' copies learn each provider's enrollment; the public listing does not show it", () => {
    const registry = new Registry(new Set(["qwen3-4b"]));
    registry.add({ id: hex("a"), trust: "process", enrollment: "ptk_1", signingKey: hex("1"), sealingKey: hex("2"), evidence: hex("3") }, port());
    const sent: unknown[] = [];
    registry.feed.subscribe({ send: (m) => sent.push(m) });
    expect(sent[0]).toMatchObject({ t: "directory", put: [{ id: hex("a"), enrollment: "ptk_1" }] });
    expect(registry.entries()[0]).not.toHaveProperty("enrollment");
  });
});
