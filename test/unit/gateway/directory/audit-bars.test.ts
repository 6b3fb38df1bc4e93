// Issue 43 item 2 §5: a failed audit takes its provider out of rotation at once, charged as faults are (its enrollment,
// and its device at the hardware rung), with no "rather than no one" fallback; a pin to it is 503 naming the audit.
import { describe, expect, it } from "vitest";
import { ProviderFaults } from "../../../../gateway/directory/provider-faults.ts";
import type { CatalogEntry } from "../../../../src/catalog.ts";
import { ApiError } from "../../../../src/errors.ts";
import type { DirectoryEntry } from "../../../../src/wire/gateway.ts";
import { fakeCoordinatorClient, fakeProviders } from "../../../fixtures/fake-coordinator.ts";

const entry = (id: string, enrollment?: string, serial?: string): DirectoryEntry => ({
  id, model_ids: ["qwen3-4b"], trust: serial === undefined ? "process" : "hardware", busy: false, waiting: 0, last_assigned: 0,
  signing_key: "1".repeat(64), sealing_key: "2".repeat(64), evidence_sha256: "3".repeat(64), ...(enrollment === undefined ? {} : { enrollment }), ...(serial === undefined ? {} : { serial }),
});

describe("§5 A failed audit bars the provider", () => {
  it("the bar follows the enrollment and the device, not the key, and does not wear off", () => {
    const faults = new ProviderFaults({ threshold: 3, windowMs: 1_000, restMs: 5_000 });
    faults.listed({ reset: true, put: [entry("key-1", "ptk_one"), entry("other", "ptk_two"), entry("mac-1", "ptk_three", "SERIAL1")], gone: [] });
    faults.bar(faults.subjectOf("key-1"), "aud_1");
    faults.bar(faults.subjectOf("mac-1"), "aud_2");
    expect([...faults.barred()].sort()).toEqual([["key-1", "aud_1"], ["mac-1", "aud_2"]]);
    // fresh keys on the same enrollment, or the same device under another enrollment: still barred
    faults.listed({ put: [entry("key-2", "ptk_one"), entry("mac-2", "ptk_four", "SERIAL1")], gone: ["key-1", "mac-1"] });
    expect([...faults.barred()].sort()).toEqual([["key-2", "aud_1"], ["mac-2", "aud_2"]]);
    expect([faults.barOf("key-2"), faults.barOf("other")]).toEqual(["aud_1", undefined]);
    // a bar is not a rest: no time ends it
    expect(faults.resting(10 ** 12)).toEqual([]);
  });

  it("the gateway skips a barred provider even when no one else is left, and a pin to it is 503 naming the audit", async () => {
    const providers = await fakeProviders(2, entry("0"));
    // no enrollment: each is charged by its own id
    const { client, deliver } = fakeCoordinatorClient(providers);
    const listing = client.list();
    deliver({ t: "directory", reset: true, put: providers.map((p) => p.entry()), gone: [] });
    await listing;
    const model = { alias: "qwen3-4b" } as CatalogEntry;
    const [a, b] = providers as [(typeof providers)[0], (typeof providers)[0]];
    client.bar(a.id, "aud_7");
    const refused = (() => {
      try {
        client.admit({ entry: model, floor: "process", pin: a.id.slice(0, 12) });
      } catch (err) {
        return err;
      }
    })();
    expect(refused).toBeInstanceOf(ApiError);
    expect([(refused as ApiError).code, (refused as ApiError).status, (refused as ApiError).message]).toEqual(["provider_unavailable", 503, expect.stringContaining("failed audit aud_7")]);
    // the other one still serves, pinned or not
    expect(() => client.admit({ entry: model, floor: "process" })).not.toThrow();
    expect(() => client.admit({ entry: model, floor: "process", pin: b.id })).not.toThrow();
    // with both barred, no one serves: a barred provider is not taken rather than no one, as a resting one is
    client.bar(b.id, "aud_8");
    expect(() => client.admit({ entry: model, floor: "process" })).toThrow(expect.objectContaining({ code: "provider_unavailable" }));
    await client.close();
  });
});
