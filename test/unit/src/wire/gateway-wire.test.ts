// The gateway link's hand-written checks (src/wire/gateway.ts): every message our own parts send reads back as
// itself, and a message of the wrong shape reads as undefined, whichever field is wrong.
import { describe, expect, it } from "vitest";
import { MAX_EXCLUDED, readFromGateway, readToGateway, type DirectoryEntry, type FromGateway, type ToGateway } from "../../../../src/wire/gateway.ts";

const KEY = "a".repeat(64);
const entry: DirectoryEntry = { id: KEY, model_ids: ["qwen3-4b"], trust: "process", busy: false, waiting: 0, signing_key: KEY, sealing_key: KEY, last_assigned: 12, evidence_sha256: KEY };
const place: FromGateway = { t: "place", id: "s_0123456789", provider: KEY, alias: "qwen3-4b", floor: "transparent", exclude: [KEY], enc: "AAAA", ct: "BBBB" };
const wire = (message: unknown) => JSON.stringify(message);

describe("DESIGN §1 The gateway link: messages between our own parts are checked by hand, not by zod", () => {
  it("every message a gateway sends reads back as itself", () => {
    const sent: FromGateway[] = [
      { t: "attestation", rid: 7, id: KEY },
      place,
      { ...place, pin: "abcd", whole: true },
      { ...place, max_bytes: 1_048_576 },
      { t: "cancel", id: "s_0123456789" },
    ];
    for (const message of sent) expect(readFromGateway(wire(message))).toEqual(message);
  });

  it("every message the coordinator sends reads back as itself", () => {
    const sent: ToGateway[] = [
      { t: "directory", reset: true, more: true, put: [entry, { ...entry, trust: "hardware", serial: "C02XYZ" }], gone: [] },
      { t: "directory", reset: true, queue: { per_provider: 32 }, put: [], gone: [] },
      { t: "directory", put: [], gone: [KEY], placed: ["s_0123456789"] },
      { t: "attestation", rid: 3, evidence: null },
      { t: "stale", id: "s_0123456789" },
      { t: "rejected", id: "s_0123456789", error: { code: "overloaded", message: "full", param: null, retry_after_s: 1 } },
      { t: "frame", id: "s_0123456789", data: "AAAA" },
      { t: "end", id: "s_0123456789", error: "agent failed" },
      { t: "gone", id: "s_0123456789", started: false, reason: "left" },
    ];
    for (const message of sent) expect(readToGateway(wire(message))).toEqual(message);
  });

  it.each([
    ["not JSON", "{"],
    ["not an object", wire([place])],
    ["an unknown kind", wire({ t: "reserve", id: "s_0123456789" })],
    ["a session id an agent would refuse", wire({ ...place, id: "bad id!" })],
    ["a floor that is no rung", wire({ ...place, floor: "cloud" })],
    ["an empty alias", wire({ ...place, alias: "" })],
    ["an alias over 128 characters", wire({ ...place, alias: "q".repeat(129) })],
    ["sealed bytes that are not a string", wire({ ...place, ct: 5 })],
    ["whole that is not true", wire({ ...place, whole: false })],
    ["a byte bound that is not positive", wire({ ...place, max_bytes: 0 })],
    ["too many exclusions", wire({ ...place, exclude: Array.from({ length: MAX_EXCLUDED + 1 }, () => KEY) })],
    ["an exclusion that is not a string", wire({ ...place, exclude: [1] })],
    ["an attestation request without an integer rid", wire({ t: "attestation", rid: 1.5, id: KEY })],
    ["a cancel without an id", wire({ t: "cancel" })],
  ])("a gateway message with %s reads as undefined", (_what, data) => {
    expect(readFromGateway(data)).toBeUndefined();
  });

  it.each([
    ["not JSON", "]"],
    ["an unknown kind", wire({ t: "place", id: "s_0123456789" })],
    ["a directory entry without its sealing key", wire({ t: "directory", put: [{ ...entry, sealing_key: undefined }], gone: [] })],
    ["a directory entry whose load is not a number", wire({ t: "directory", put: [{ ...entry, waiting: "1" }], gone: [] })],
    ["a directory entry at no rung", wire({ t: "directory", put: [{ ...entry, trust: "cloud" }], gone: [] })],
    ["gone ids that are not strings", wire({ t: "directory", put: [], gone: [1] })],
    ["queue caps that are not a number", wire({ t: "directory", reset: true, queue: { per_provider: "32" }, put: [], gone: [] })],
    ["a rejection without its error's param", wire({ t: "rejected", id: "s_0123456789", error: { code: "x", message: "y" } })],
    ["a frame without data", wire({ t: "frame", id: "s_0123456789" })],
    ["a provider gone without saying whether it started", wire({ t: "gone", id: "s_0123456789", reason: "left" })],
    ["a directory entry that names no evidence", wire({ t: "directory", put: [{ ...entry, evidence_sha256: undefined }], gone: [] })],
    ["a directory entry whose evidence digest is not one", wire({ t: "directory", put: [{ ...entry, evidence_sha256: "e" }], gone: [] })],
    ["an attestation whose evidence is a string", wire({ t: "attestation", rid: 1, evidence: "x" })],
  ])("a coordinator message with %s reads as undefined", (_what, data) => {
    expect(readToGateway(data)).toBeUndefined();
  });
});
