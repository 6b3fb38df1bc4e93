// SPEC §4.1 routing read from the index (the coordinator's, and each gateway's copy of the directory): it must
// choose what chooseProvider chooses over every present provider, through any sequence of joins, adverts,
// re-attestations, assignments, sessions starting and ending, departures and removals.
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { DirectoryCopy } from "../../../../gateway/directory/directory-copy.ts";
import { ProviderIndex } from "../../../../gateway/routing/provider-index.ts";
import { Registry, type AgentPort, type GatewayPort } from "../../../../gateway/coordinator/registry.ts";
import { chooseProvider, type Routable } from "../../../../src/routing/choose.ts";
import { ApiError } from "../../../../src/errors.ts";
import { TRUST_LEVELS, type TrustLevel } from "../../../../src/receipt/rungs.ts";
import type { ToAgent } from "../../../../src/wire/agent.ts";
import { routable } from "../../../fixtures/routable.ts";

const ALIASES = ["qwen3-4b", "qwen3-8b", "gemma-3"];
/** Ids sharing prefixes, so pins by prefix can be ambiguous. */
const IDS = ["aa", "ab", "ba", "c0", "c1"].map((p) => p.padEnd(64, "0").slice(0, 63) + p[1]);

type Model = Routable & { leaving: boolean };
const provider = (id: string, { leaving = false, ...over }: Partial<Model> = {}): Model => ({ ...routable(id, over), leaving });
const load = (p: Model) => (p.busy ? 1 : 0) + p.waiting;

function indexOf(providers: Model[]) {
  const index = new ProviderIndex<Model>();
  for (const p of providers) index.put(p, load(p));
  return index;
}

describe("ProviderIndex", () => {
  it("idle first, the least recently assigned among idle ones, else the shortest queue", () => {
    const [a, b, c] = [provider("aa", { busy: true }), provider("bb", { lastAssigned: 20 }), provider("cc", { lastAssigned: 10 })];
    const index = indexOf([a, b, c]);
    expect(index.choose("qwen3-4b", "process")).toBe(c);
    c.waiting = 1;
    index.reweigh(c, load(c));
    expect(index.choose("qwen3-4b", "process")).toBe(b);
    b.busy = true;
    b.waiting = 2;
    index.reweigh(b, load(b));
    expect(index.choose("qwen3-4b", "process")).toBe(a);
  });

  it("ties go to the provider that joined first, as the directory's order does", () => {
    const [a, b] = [provider("bb"), provider("aa")];
    expect(indexOf([a, b]).choose("qwen3-4b", "process")).toBe(a);
  });

  it("honours the floor, the alias and exclusions, walking past excluded providers", () => {
    const ps = ["aa", "bb", "cc", "dd"].map((id, i) => provider(id, { lastAssigned: i, trust: i === 3 ? "hardware" : "process" }));
    const index = indexOf(ps);
    expect(index.choose("qwen3-4b", "hardware")).toBe(ps[3]);
    expect(index.choose("qwen3-8b", "process")).toBeUndefined();
    expect(index.choose("qwen3-4b", "process", new Set([ps[0]!.id, ps[1]!.id]))).toBe(ps[2]);
    expect(index.choose("qwen3-4b", "process", new Set(ps.map((p) => p.id)))).toBeUndefined();
  });

  it("re-placed after a new rung or aliases; gone after delete; prefixes by binary search", () => {
    const [a, b] = [provider("aa"), provider("ab", { lastAssigned: 5 })];
    const index = indexOf([a, b]);
    a.model_ids = ["qwen3-8b"];
    index.put(a, load(a));
    expect(index.choose("qwen3-4b", "process")).toBe(b);
    expect(index.choose("qwen3-8b", "process")).toBe(a);
    b.trust = "hardware";
    index.put(b, load(b));
    expect(index.choose("qwen3-4b", "transparent")).toBe(b);
    expect(index.withPrefix("a").map((p) => p.id).sort()).toEqual([a.id, b.id]);
    expect(index.withPrefix(b.id)).toEqual([b]);
    index.delete(b.id);
    expect(index.choose("qwen3-4b", "process")).toBeUndefined();
    expect(index.withPrefix("a")).toEqual([a]);
    expect(index.size).toBe(1);
  });
});

/** What chooseProvider says for the present providers: the id, or the error's code and message. */
function expected(providers: Model[], alias: string, floor: TrustLevel, exclude: ReadonlySet<string>, pin?: string, prefer?: string): string {
  try {
    return chooseProvider(
      providers.filter((p) => !p.leaving),
      { alias, floor, pin, prefer },
      exclude,
    ).id;
  } catch (error) {
    if (error instanceof ApiError) return `${error.code}: ${error.message}`;
    throw error;
  }
}

const idArb = fc.constantFrom(...IDS);
const trustArb = fc.constantFrom(...TRUST_LEVELS);
const aliasesArb = fc.subarray([...ALIASES, "unknown-alias"]);
const requestArb = fc.record({
  alias: fc.constantFrom(...ALIASES, "qwen3-4b", "qwen3-4b"),
  floor: fc.constantFrom(...TRUST_LEVELS, "process", "process", "process"),
  exclude: fc.oneof(fc.constant<string[]>([]), fc.subarray(IDS, { maxLength: 4 })),
  pin: fc.option(fc.oneof(idArb, idArb.map((id) => id.slice(0, 8)), fc.constantFrom("a", "b", "c", "f")), { nil: undefined }),
  /** A provider to prefer (the index test), or an affinity key (the copy's test). */
  prefer: fc.option(idArb, { nil: undefined }),
  affinity: fc.option(fc.constantFrom("k1", "k2"), { nil: undefined }),
  tick: fc.nat(2),
});
const opArb = fc.oneof(
  { weight: 1, arbitrary: fc.record({ op: fc.constant("add" as const), id: idArb, trust: trustArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("advertise" as const), id: idArb, aliases: aliasesArb }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("setTrust" as const), id: idArb, trust: trustArb }) },
  { weight: 8, arbitrary: fc.record({ op: fc.constant("reserve" as const), request: requestArb }) },
  { weight: 5, arbitrary: fc.record({ op: fc.constant("start" as const), id: idArb }) },
  { weight: 5, arbitrary: fc.record({ op: fc.constant("end" as const), id: idArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("cancel" as const), id: idArb }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("leave" as const), id: idArb }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("remove" as const), id: idArb }) },
);

/** A directory that starts with several providers serving mostly the same aliases, then changes at random. */
const scenarioArb = fc
  .tuple(
    fc.uniqueArray(fc.record({ id: idArb, trust: trustArb, extra: aliasesArb }), { minLength: 3, maxLength: IDS.length, selector: (p) => p.id }),
    fc.array(opArb, { minLength: 20, maxLength: 150 }),
  )
  .map(([initial, ops]) => [
    ...initial.flatMap(({ id, trust, extra }) => [
      { op: "add" as const, id, trust },
      { op: "advertise" as const, id, aliases: ["qwen3-4b", ...extra] },
    ]),
    ...ops,
  ]);

describe("ProviderIndex against chooseProvider (property)", () => {
  it("chooses what chooseProvider chooses, after any sequence of changes", () => {
    fc.assert(
      fc.property(scenarioArb, (ops) => {
        const index = new ProviderIndex<Model>();
        let providers: Model[] = [];
        let clock = 1;
        const find = (id: string) => providers.find((p) => p.id === id);
        const sync = (p: Model) => index.reweigh(p, load(p));
        for (const step of ops) {
          const p = "id" in step ? find(step.id) : undefined;
          if (step.op === "add") {
            providers = providers.filter((q) => q.id !== step.id);
            index.delete(step.id);
            const fresh = provider(step.id, { trust: step.trust, model_ids: [] });
            providers.push(fresh);
            index.put(fresh, 0);
          } else if (step.op === "advertise" && p) {
            p.model_ids = [...new Set(step.aliases.filter((a) => ALIASES.includes(a)))];
            if (!p.leaving) index.put(p, load(p));
          } else if (step.op === "setTrust" && p) {
            p.trust = step.trust;
            if (!p.leaving) index.put(p, load(p));
          } else if (step.op === "start" && p && !p.busy && p.waiting > 0) {
            p.waiting--;
            p.busy = true;
            sync(p);
          } else if (step.op === "end" && p?.busy) {
            p.busy = false;
            sync(p);
          } else if (step.op === "cancel" && p && p.waiting > 0) {
            p.waiting--;
            sync(p);
          } else if (step.op === "leave" && p) {
            p.leaving = true;
            p.waiting = 0;
            index.delete(p.id);
          } else if (step.op === "remove" && p) {
            providers = providers.filter((q) => q !== p);
            index.delete(p.id);
          } else if (step.op === "reserve") {
            const { alias, floor, pin, prefer, tick } = step.request;
            const exclude = new Set(step.request.exclude);
            const want = expected(providers, alias, floor, exclude, pin, prefer);
            if (pin !== undefined) {
              // pins read only the providers the prefix matches
              const matches = index.withPrefix(pin);
              expect(expected(matches, alias, floor, exclude, pin)).toBe(want);
              continue;
            }
            const chosen = index.choose(alias, floor, exclude.size === 0 ? undefined : exclude, prefer);
            expect(chosen?.id ?? want, want).toBe(want);
            if (!chosen) expect(want).toMatch(/^provider_unavailable/);
            if (chosen) {
              clock += tick; // 0 gives ties in lastAssigned, as Date.now() does within a millisecond
              chosen.lastAssigned = clock;
              chosen.waiting++;
              sync(chosen);
            }
          }
        }
        expect(index.size).toBe(providers.filter((p) => !p.leaving).length);
      }),
      { numRuns: 500 },
    );
  });
});

describe("Routing from a gateway's copy against chooseProvider (property)", () => {
  afterEach(() => vi.useRealTimers());

  it("the copy chooses a provider chooseProvider over the listing would (the pinned one, or one as lightly loaded), and the registry takes it", () => {
    vi.useFakeTimers();
    const sealed = { enc: "ZW5j", ct: "Y3Q=" };
    fc.assert(
      fc.property(scenarioArb, (ops) => {
        const limits = { queuePerProvider: 10_000, queuePerAlias: 10_000 };
        const registry = new Registry(new Set(ALIASES), limits);
        // a small affinity bound: lru-cache allocates its whole bound up front, once per copy
        const copy = new DirectoryCopy({ maxKeys: 8 });
        const gateway: GatewayPort = { send: (m) => void (m.t === "directory" && copy.apply(m)) };
        registry.feed.subscribe(gateway);
        const lastAssigned = new Map<string, number>();
        /** Per provider, the session its agent is running, and the sessions queued behind it. */
        const running = new Map<string, string | undefined>();
        const queued = new Map<string, string[]>();
        let n = 0;
        const port = (id: string): AgentPort => ({
          send: (m: ToAgent) => {
            if (m.t !== "session") return;
            running.set(id, m.id);
            queued.set(id, (queued.get(id) ?? []).filter((s) => s !== m.id));
          },
          close: () => undefined,
        });
        for (const step of ops) {
          if (step.op === "add") {
            registry.add({ id: step.id, trust: step.trust, signingKey: "1".repeat(64), sealingKey: "2".repeat(64), evidence: "3".repeat(64) }, port(step.id));
            lastAssigned.set(step.id, 0);
            running.delete(step.id);
            queued.set(step.id, []);
          } else if (step.op === "advertise") registry.advertise(step.id, step.aliases);
          else if (step.op === "setTrust") registry.setTrust(step.id, step.trust, undefined, "3".repeat(64));
          else if (step.op === "end") {
            const active = running.get(step.id);
            running.delete(step.id); // ending may start the next in line at once
            if (active) registry.end(step.id, active, undefined);
          } else if (step.op === "cancel") {
            const last = queued.get(step.id)?.pop();
            if (last) registry.cancel(gateway, last);
          } else if (step.op === "leave") registry.leave(step.id);
          else if (step.op === "remove") registry.remove(step.id, "gone");
          else if (step.op === "reserve") {
            const { alias, floor, pin, affinity, tick } = step.request;
            vi.advanceTimersByTime(tick);
            // what the copy holds by the end of the turn
            registry.feed.flush();
            const views = registry.entries().map((e) => ({ ...e, lastAssigned: lastAssigned.get(e.id) ?? 0, leaving: false }));
            const exclude = new Set(step.request.exclude);
            const want = expected(views, alias, floor, exclude, pin);
            const id = `s_${n++}`;
            let got: string;
            try {
              got = copy.choose(id, { alias, floor, pin, affinity }, step.request.exclude).id;
              const placed = registry.place(gateway, { t: "place", id, provider: got, alias, floor, ...(pin === undefined ? {} : { pin }), exclude: step.request.exclude, ...sealed });
              copy.settle(id);
              expect(placed).toBe("placed");
              lastAssigned.set(got, Date.now());
              if (running.get(got) !== id) queued.get(got)!.push(id);
            } catch (error) {
              if (!(error instanceof ApiError)) throw error;
              got = `${error.code}: ${error.message}`;
            }
            const loadOf = (pid: string) => load(views.find((v) => v.id === pid)!);
            // among equally loaded providers the copy may break the tie otherwise (it saw them join in its own order)
            if (pin === undefined && views.some((v) => v.id === want) && views.some((v) => v.id === got)) expect(loadOf(got)).toBe(loadOf(want));
            else expect(got).toBe(want);
          }
        }
      }),
      { numRuns: 1000 },
    );
  });
});
