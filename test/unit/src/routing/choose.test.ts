// SPEC §4.1 routing and §2.4's trust floor as chooseProvider applies them to a directory listing.
import { describe, expect, it } from "vitest";
import { chooseCandidates, chooseProvider } from "../../../../src/routing/choose.ts";
import { servableAliases } from "../../../../gateway/openai/listing.ts";
import { qualified } from "../../../../src/receipt/rungs.ts";
import { catchApiError } from "../../../fixtures/api-error.ts";
import { routable } from "../../../fixtures/routable.ts";

const provider = routable;

describe("§4.1 Routing", () => {
  const floor = "process" as const;

  it("with no pin, chooses idle-first", () => {
    const providers = [provider("aa", { busy: true }), provider("bb", { busy: true, waiting: 2 }), provider("cc")];
    expect(chooseProvider(providers, { alias: "qwen3-4b", floor }).id).toBe(provider("cc").id);
  });

  it("among idle providers, spreads load fairly: the least recently used first", () => {
    const providers = [provider("aa", { lastAssigned: 30 }), provider("bb", { lastAssigned: 10 }), provider("cc", { lastAssigned: 20 })];
    expect(chooseProvider(providers, { alias: "qwen3-4b", floor }).id).toBe(provider("bb").id);
  });

  it("when none is idle, the shortest queue", () => {
    const providers = [provider("aa", { busy: true, waiting: 2 }), provider("bb", { busy: true, waiting: 1 }), provider("cc", { busy: true, waiting: 3 })];
    expect(chooseProvider(providers, { alias: "qwen3-4b", floor }).id).toBe(provider("bb").id);
  });

  it("a preferred provider (where a caller's cache may be) is taken when idle, and never over idle-first, the floor, an exclusion or a pin", () => {
    const providers = [provider("aa", { lastAssigned: 10 }), provider("bb", { lastAssigned: 30 }), provider("cc", { busy: true }), provider("dd", { trust: "hardware", lastAssigned: 40 })];
    const choose = (prefer: string, more: { floor?: "process" | "hardware"; pin?: string } = {}, exclude = new Set<string>()) =>
      chooseProvider(providers, { alias: "qwen3-4b", floor: more.floor ?? floor, prefer: provider(prefer).id, ...(more.pin ? { pin: more.pin } : {}) }, exclude).id;
    // idle bb is preferred over aa, the least recently used
    expect(choose("bb")).toBe(provider("bb").id);
    // busy cc is not: the request goes where it would have gone
    expect(choose("cc")).toBe(provider("aa").id);
    // nor below the floor, nor excluded, nor against a pin
    expect(choose("aa", { floor: "hardware" })).toBe(provider("dd").id);
    expect(choose("bb", {}, new Set([provider("bb").id]))).toBe(provider("aa").id);
    expect(choose("bb", { pin: provider("cc").id })).toBe(provider("cc").id);
  });

  it("skips providers that already failed this request before it started", () => {
    const providers = [provider("aa"), provider("bb", { busy: true })];
    expect(chooseProvider(providers, { alias: "qwen3-4b", floor }, new Set([provider("aa").id])).id).toBe(provider("bb").id);
  });

  it("only providers advertising the alias are candidates; none → 503 provider_unavailable", () => {
    const providers = [provider("aa", { model_ids: ["qwen3-8b"] })];
    const error = catchApiError(() => chooseProvider(providers, { alias: "qwen3-4b", floor }));
    expect([error.status, error.code, error.svcAction]).toEqual([503, "provider_unavailable", "wait"]);
  });

  it("a pin takes the exact id or a unique prefix of at least 8 characters, and never hops", () => {
    const providers = [provider("abcdef0123", { busy: true, waiting: 5 }), provider("abcdef99")];
    expect(chooseProvider(providers, { alias: "qwen3-4b", floor, pin: "abcdef01" }).id).toBe(provider("abcdef0123").id);
    expect(chooseProvider(providers, { alias: "qwen3-4b", floor, pin: provider("abcdef99").id }).id).toBe(provider("abcdef99").id);
  });

  it("an ambiguous pin is a 400 naming provider", () => {
    const providers = [provider("abcdef0123"), provider("abcdef0199")];
    const error = catchApiError(() => chooseProvider(providers, { alias: "qwen3-4b", floor, pin: "abcdef01" }));
    expect([error.status, error.code, error.param]).toEqual([400, "invalid_value", "provider"]);
  });

  it("a pin to a machine that is offline, below the floor, or not serving the alias → 503 provider_unavailable", () => {
    const providers = [provider("aaaaaaaa", { trust: "process" }), provider("bbbbbbbb", { trust: "hardware", model_ids: [] })];
    for (const [pin, f] of [["cccccccc", "process"], ["aaaaaaaa", "transparent"], ["bbbbbbbb", "process"]] as const) {
      const error = catchApiError(() => chooseProvider(providers, { alias: "qwen3-4b", floor: f, pin }));
      expect([error.status, error.code]).toEqual([503, "provider_unavailable"]);
    }
  });
});

describe("DESIGN §10 Gateway-blind: the candidates are chooseProvider's choice repeated", () => {
  const floor = "process" as const;
  const ids = (ps: { id: string }[]) => ps.map((p) => p.id);

  it("up to three distinct, each the choice once those before it are excluded: idle first, then the shortest queue, least recently used among equals", () => {
    const providers = [
      provider("aa", { busy: true, waiting: 2 }), provider("bb", { lastAssigned: 20 }), provider("cc", { busy: true }),
      provider("dd", { lastAssigned: 10 }), provider("ee", { busy: true, waiting: 1 }),
    ];
    expect(ids(chooseCandidates(providers, { alias: "qwen3-4b", floor }, 3))).toEqual(ids([provider("dd"), provider("bb"), provider("cc")]));
    const repeated: string[] = [];
    for (let i = 0; i < 5; i++) repeated.push(chooseProvider(providers, { alias: "qwen3-4b", floor }, new Set(repeated)).id);
    expect(ids(chooseCandidates(providers, { alias: "qwen3-4b", floor }, 5))).toEqual(repeated);
    expect(ids(chooseCandidates(providers, { alias: "qwen3-4b", floor }, 3, new Set([provider("dd").id])))).toEqual(ids([provider("bb"), provider("cc"), provider("ee")]));
  });

  it("fewer when fewer qualify: the floor, the alias and the only-list hold; none is chooseProvider's 503", () => {
    const providers = [provider("aa", { trust: "hardware" }), provider("bb"), provider("cc", { model_ids: ["qwen3-8b"] }), provider("dd", { trust: "transparent", busy: true })];
    expect(ids(chooseCandidates(providers, { alias: "qwen3-4b", floor: "transparent" }, 3))).toEqual(ids([provider("aa"), provider("dd")]));
    expect(ids(chooseCandidates(providers, { alias: "qwen3-4b", floor, only: [provider("bb").id, provider("cc").id] }, 3))).toEqual(ids([provider("bb")]));
    const error = catchApiError(() => chooseCandidates(providers, { alias: "qwen3-8b", floor: "hardware" }, 3));
    expect([error.status, error.code]).toEqual([503, "provider_unavailable"]);
  });

  it("a pin gives its one provider, however many are asked for; an idle preferred one comes first", () => {
    const providers = [provider("abcdef0123", { busy: true }), provider("bb"), provider("cc", { lastAssigned: 5 })];
    expect(ids(chooseCandidates(providers, { alias: "qwen3-4b", floor, pin: "abcdef01" }, 3))).toEqual(ids([provider("abcdef0123")]));
    expect(ids(chooseCandidates(providers, { alias: "qwen3-4b", floor, prefer: provider("cc").id }, 3))).toEqual(ids([provider("cc"), provider("bb"), provider("abcdef0123")]));
  });
});

describe("§2.4 Provider record: only providers at or above the floor", () => {
  const providers = [
    provider("aa", { trust: "process", model_ids: ["qwen3-8b"] }),
    provider("bb", { trust: "transparent", model_ids: ["qwen3-4b"] }),
    provider("cc", { trust: "hardware", model_ids: ["qwen3-4b"] }),
  ];

  it("the floor orders process < transparent < hardware", () => {
    expect(qualified(providers, "process")).toHaveLength(3);
    expect(qualified(providers, "transparent").map((p) => p.trust)).toEqual(["transparent", "hardware"]);
    expect(qualified(providers, "hardware").map((p) => p.trust)).toEqual(["hardware"]);
  });

  it("§4.2: servable aliases are the union of qualified providers', in catalog order", () => {
    expect(servableAliases(providers, "process", ["qwen3-4b", "qwen3-8b"])).toEqual(["qwen3-4b", "qwen3-8b"]);
    expect(servableAliases(providers, "transparent", ["qwen3-4b", "qwen3-8b"])).toEqual(["qwen3-4b"]);
  });
});
