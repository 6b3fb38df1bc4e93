// DESIGN §10 gateway-blind requests, as the gateway's routing and the coordinator carry them: chosen only among the
// candidates the caller sealed to, the envelope relayed to the agent as it came with the gateway's cache scope beside
// it, the clear receipt or error code beside the final frame relayed back, and only whole padded frames relayed.
import { describe, expect, it } from "vitest";
import { blindWireBytes, isSealedFrame } from "../../../gateway/directory/blind-attempt.ts";
import { ProviderIndex, route } from "../../../gateway/routing/provider-index.ts";
import { chooseProvider } from "../../../src/routing/choose.ts";
import { PAD_BYTES, toBase64url, type SealedEnvelope } from "../../../src/blind/format.ts";
import { answerLimits } from "../../../src/session/answer-bounds.ts";
import { readFromGateway, readToGateway, type FromGateway, type ToGateway } from "../../../src/wire/gateway.ts";
import { catchApiError } from "../../fixtures/api-error.ts";
import { registryWith } from "../../fixtures/registry-ports.ts";
import { routable } from "../../fixtures/routable.ts";

const hex = (c: string) => c.repeat(64);
const envelope = (candidates: string[]): SealedEnvelope => ({
  v: 1, kind: "chat", alias: "qwen3-4b", stream: true, max_tokens: 16, request_sha256: hex("e"),
  candidates: candidates.map((provider) => ({ provider, enc: "ZW5j", key: "a2V5" })), ct: "Y3Q",
});
const cache = { scope: hex("5"), owner: hex("6") };

function setup(ids: string[]) {
  const { registry, agents, gateway, inbox } = registryWith(ids);
  const place = (id: string, provider: string, candidates: string[]): Extract<FromGateway, { t: "place" }> => ({
    t: "place", id, provider, alias: "qwen3-4b", floor: "process", exclude: [], candidates, blind: envelope(candidates), cache,
  });
  return { registry, agents, gateway, inbox, place };
}

describe("DESIGN §10 Gateway-blind requests: routing among the sealed candidates", () => {
  it("chooses only among the candidates, by the usual rules, and none outside them even when idler", () => {
    const providers = [routable("aa", { busy: true }), routable("bb", { busy: true, waiting: 1 }), routable("cc", { busy: true }), routable("dd")];
    const only = [routable("bb").id, routable("cc").id];
    expect(chooseProvider(providers, { alias: "qwen3-4b", floor: "process", only }).id).toBe(routable("cc").id);
    const index = new ProviderIndex<ReturnType<typeof routable>>();
    for (const p of providers) index.put(p, (p.busy ? 1 : 0) + p.waiting);
    expect(route(index, { alias: "qwen3-4b", floor: "process", only }, [], (p) => p).id).toBe(routable("cc").id);
    expect(route(index, { alias: "qwen3-4b", floor: "process", only }, [routable("cc").id], (p) => p).id).toBe(routable("bb").id);
    // every candidate below the floor or excluded: no provider, never one outside the candidates
    expect(catchApiError(() => route(index, { alias: "qwen3-4b", floor: "process", only }, only, (p) => p)).code).toBe("provider_unavailable");
    expect(catchApiError(() => chooseProvider(providers, { alias: "qwen3-4b", floor: "hardware", only })).code).toBe("provider_unavailable");
  });
});

describe("DESIGN §10 Gateway-blind requests: the coordinator relays them unchanged", () => {
  it("a blind placement and its messages read back as themselves on the gateway link; a placement both sealed and blind does not", () => {
    const { place } = setup([]);
    const placement = { ...place("s_0123456789", hex("a"), [hex("a"), hex("b")]), max_bytes: 4096 };
    expect(readFromGateway(JSON.stringify(placement))).toEqual(placement);
    expect(readFromGateway(JSON.stringify({ ...placement, enc: "ZW5j", ct: "Y3Q" }))).toBeUndefined();
    expect(readFromGateway(JSON.stringify({ ...placement, cache: { scope: "not hex" } }))).toBeUndefined();
    expect(readFromGateway(JSON.stringify({ ...placement, candidates: [hex("a"), hex("b"), hex("c"), hex("d")] }))).toBeUndefined();
    const final: ToGateway = { t: "frame", id: "s_0123456789", data: "ZnJhbWU", final: true, receipt: { version: 3 } };
    expect(readToGateway(JSON.stringify(final))).toEqual(final);
    const end: ToGateway = { t: "end", id: "s_0123456789", code: "sealed_request_invalid" };
    expect(readToGateway(JSON.stringify(end))).toEqual(end);
  });

  it("the agent gets the envelope as it came with the gateway's cache scope; the clear receipt and end code come back beside the frames", () => {
    const { registry, agents, gateway, inbox, place } = setup([hex("a"), hex("b")]);
    expect(registry.place(gateway, place("s_first0001", hex("a"), [hex("a"), hex("b")]))).toBe("placed");
    expect(agents.get(hex("a"))).toContainEqual({ t: "session", id: "s_first0001", alias: "qwen3-4b", blind: envelope([hex("a"), hex("b")]), cache });
    registry.frame(hex("a"), "s_first0001", "ZnJhbWU");
    registry.frame(hex("a"), "s_first0001", "bGFzdA", { final: true, receipt: { version: 3 } });
    registry.end(hex("a"), "s_first0001", undefined);
    expect(inbox.filter((m) => m.t !== "directory")).toEqual([
      { t: "started", id: "s_first0001" },
      { t: "frame", id: "s_first0001", data: "ZnJhbWU" },
      { t: "frame", id: "s_first0001", data: "bGFzdA", final: true, receipt: { version: 3 } },
      { t: "end", id: "s_first0001" },
    ]);
    expect(registry.place(gateway, place("s_second001", hex("a"), [hex("a")]))).toBe("placed");
    registry.end(hex("a"), "s_second001", "the sealed request did not open with this provider's key", "sealed_request_invalid");
    expect(inbox.at(-1)).toEqual({ t: "end", id: "s_second001", error: "the sealed request did not open with this provider's key", code: "sealed_request_invalid" });
  });

  it("a choice outside the candidates is stale, and so is one where another candidate is less loaded; one inside them stands", () => {
    const { registry, gateway, place } = setup([hex("a"), hex("b"), hex("c")]);
    expect(registry.place(gateway, place("s_outside01", hex("c"), [hex("a"), hex("b")]))).toBe("stale");
    expect(registry.place(gateway, place("s_busy00001", hex("a"), [hex("a"), hex("b")]))).toBe("placed");
    // a is busy now, b idle: a second request for the same two on a is stale, on b it stands
    expect(registry.place(gateway, place("s_again0001", hex("a"), [hex("a"), hex("b")]))).toBe("stale");
    expect(registry.place(gateway, place("s_again0002", hex("b"), [hex("a"), hex("b")]))).toBe("placed");
  });
});

describe("DESIGN §10 Gateway-blind requests: the relay's bounds", () => {
  it("relays only base64url of a whole number of padded blocks and the tag", () => {
    const frame = (bytes: number) => toBase64url(new Uint8Array(bytes));
    expect(isSealedFrame(frame(PAD_BYTES + 16))).toBe(true);
    expect(isSealedFrame(frame(3 * PAD_BYTES + 16))).toBe(true);
    for (const bytes of [16, PAD_BYTES, PAD_BYTES + 15, PAD_BYTES + 17, 2 * PAD_BYTES]) expect(isSealedFrame(frame(bytes))).toBe(false);
    expect(isSealedFrame(frame(PAD_BYTES + 16).replace(/^./, "+"))).toBe(false);
  });

  it("a blind answer's wire budget is the clear budget's, plus a padded frame per piece", () => {
    const chat = blindWireBytes({ kind: "chat", max_tokens: 100 }, {});
    const limits = answerLimits({ max_tokens: 100 });
    expect(chat).toBeGreaterThanOrEqual(limits.wireBytes + limits.pieces * Math.ceil(((PAD_BYTES + 16) * 4) / 3));
    expect(blindWireBytes({ kind: "chat", max_tokens: 200 }, {})).toBeGreaterThan(chat);
    expect(blindWireBytes({ kind: "embeddings", max_tokens: 2 }, { embedding_dimensions: 64 })).toBeLessThan(blindWireBytes({ kind: "embeddings", max_tokens: 20 }, { embedding_dimensions: 64 }));
  });
});
