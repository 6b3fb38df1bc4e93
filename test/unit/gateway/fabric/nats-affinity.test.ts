// DESIGN §7/§9: what a gateway reads of another gateway's affinity message on NATS: a key and a provider id, or nothing.
import { describe, expect, it } from "vitest";
import { readAffinity } from "../../../../gateway/fabric/nats-affinity.ts";
import { affinityKey } from "../../../../gateway/keys/cache-scope.ts";

const bytes = (value: unknown) => Buffer.from(typeof value === "string" ? value : JSON.stringify(value));
const key = affinityKey("qwen3-4b", "0".repeat(64));

describe("DESIGN §7 Replicas on NATS: affinity messages", () => {
  it("reads a key and a provider id", () => {
    expect(readAffinity(bytes({ k: key, p: "a1b2c3d4e5f6" }))).toEqual({ k: key, p: "a1b2c3d4e5f6" });
  });

  it("drops anything else: not JSON, another shape, a key that is no SHA-256, an id that is no subject token, too long", () => {
    for (const bad of ["not json", { k: key }, { k: "short", p: "a1b2" }, { k: key, p: "a.b" }, { k: key, p: "x".repeat(129) }, { k: key, p: "a1b2", pad: "x".repeat(600) }, [key, "a1b2"], null]) {
      expect(readAffinity(bytes(bad)), JSON.stringify(bad)).toBeUndefined();
    }
  });
});
