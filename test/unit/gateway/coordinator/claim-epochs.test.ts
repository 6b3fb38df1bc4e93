// docs/architecture.md "Replicas on NATS", ownership: which of two coordinators holding one provider yields. The
// greater epoch (the shared database's order of claims) is the newer connection and wins; a hold still waiting for
// its epoch yields to any claim; equal epochs fall to the greater coordinator id on both sides.
import { describe, expect, it } from "vitest";
import { yieldsTo } from "../../../../gateway/coordinator/claim-epochs.ts";

describe("Replicas on NATS: provider ownership by claim epoch", () => {
  it("the hold with the smaller epoch yields; the one with the greater keeps the provider", () => {
    expect(yieldsTo(5, 6, "c_a", "c_b")).toBe(true);
    expect(yieldsTo(6, 5, "c_b", "c_a")).toBe(false);
  });

  it("a hold whose epoch has not come (the database away) yields to any claim, however small its epoch", () => {
    expect(yieldsTo(undefined, 1, "c_z", "c_a")).toBe(true);
  });

  it("equal epochs: exactly one side yields, the same one seen from either side", () => {
    expect([yieldsTo(7, 7, "c_a", "c_b"), yieldsTo(7, 7, "c_b", "c_a")]).toEqual([true, false]);
  });
});
