// The routing index (SPEC §4.1): for each alias and rung, the present providers in a binary heap ordered as
// chooseProvider orders them (load = busy + waiting, then least recently assigned, then the order they
// joined the directory), so choosing reads the top of at most three heaps instead of every provider (or only a
// gateway-blind request's few candidates), and a change of load, rung or aliases moves one provider in the heaps of
// its own aliases. A sorted list of ids answers pin prefixes by binary search; a preferred provider (affinity) is one
// map lookup. It must choose exactly what chooseProvider would over the same providers:
// test/unit/gateway/routing/provider-index.test.ts checks that on random sequences of directory changes.
import { TRUST_LEVELS, type TrustLevel } from "../../src/receipt/rungs.ts";
import { chooseCandidates, chooseProvider, noProvider, type Routable, type RouteRequest } from "../../src/routing/choose.ts";

/** What the index reads from a provider: read again whenever the registry calls `put` or `reweigh`. */
export interface Indexed {
  id: string;
  trust: TrustLevel;
  model_ids: readonly string[];
  /** Milliseconds timestamp of its last assignment; 0 if never. */
  lastAssigned: number;
}

interface Node<P> {
  p: P;
  /** When it joined the directory: the tie-break that array order gives chooseProvider. */
  seq: number;
  load: number;
  last: number;
  /** One slot per advertised alias, each in that alias's heap for the provider's rung. */
  slots: Slot<P>[];
}
interface Slot<P> {
  node: Node<P>;
  heap: Slot<P>[];
  pos: number;
}

/** Whether a comes before b in routing order. */
function before<P>(a: Node<P>, b: Node<P>): boolean {
  return a.load < b.load || (a.load === b.load && (a.last < b.last || (a.last === b.last && a.seq < b.seq)));
}

/** Whether the node sits in one of an alias's heaps at or above the floor (as indexed, whatever its record says since). */
function serves<P>(node: Node<P>, perRung: Slot<P>[][], floor: TrustLevel): boolean {
  const from = TRUST_LEVELS.indexOf(floor);
  return node.slots.some((slot) => perRung.indexOf(slot.heap) >= from);
}

export class ProviderIndex<P extends Indexed> {
  private readonly nodes = new Map<string, Node<P>>();
  /** Per alias, one heap per rung (indexed as TRUST_LEVELS). */
  private readonly heaps = new Map<string, Slot<P>[][]>();
  /** Ids of the indexed providers, sorted, for pin prefixes. */
  private readonly ids: string[] = [];
  private seq = 0;

  get size(): number {
    return this.nodes.size;
  }

  /** Indexes a provider that takes sessions, or re-places it after its rung or aliases changed. */
  put(p: P, load: number): void {
    let node = this.nodes.get(p.id);
    if (node && node.p !== p) {
      this.delete(p.id);
      node = undefined;
    }
    if (!node) {
      node = { p, seq: this.seq++, load, last: p.lastAssigned, slots: [] };
      this.nodes.set(p.id, node);
      this.ids.splice(this.lowerBound(p.id), 0, p.id);
    } else {
      for (const slot of node.slots) this.unslot(slot);
      node.slots = [];
      node.load = load;
      node.last = p.lastAssigned;
    }
    const rung = TRUST_LEVELS.indexOf(p.trust);
    for (const alias of new Set(p.model_ids)) {
      let perRung = this.heaps.get(alias);
      if (!perRung) this.heaps.set(alias, (perRung = TRUST_LEVELS.map((): Slot<P>[] => [])));
      const heap = perRung[rung]!;
      const slot: Slot<P> = { node, heap, pos: heap.length };
      heap.push(slot);
      node.slots.push(slot);
      this.up(slot);
    }
  }

  /** Its load or last assignment changed; a provider that is not indexed (gone, leaving) is ignored. */
  reweigh(p: P, load: number): void {
    const node = this.nodes.get(p.id);
    if (!node || node.p !== p) return;
    node.load = load;
    node.last = p.lastAssigned;
    for (const slot of node.slots) this.down(this.up(slot));
  }

  /** Takes it out of routing (it left, or is leaving). */
  delete(id: string): void {
    const node = this.nodes.get(id);
    if (!node) return;
    for (const slot of node.slots) this.unslot(slot);
    this.nodes.delete(id);
    const at = this.lowerBound(id);
    if (this.ids[at] === id) this.ids.splice(at, 1);
  }

  /** The provider chooseProvider would pick for an unpinned request, or undefined when none qualifies. */
  choose(alias: string, floor: TrustLevel, exclude?: ReadonlySet<string>, prefer?: string): P | undefined {
    const perRung = this.heaps.get(alias);
    if (!perRung) return undefined;
    if (prefer !== undefined) {
      // one lookup: an idle preferred provider is as good as any idle one, so it is taken as it is
      const node = this.nodes.get(prefer);
      if (node && node.load === 0 && !exclude?.has(prefer) && serves(node, perRung, floor)) return node.p;
    }
    let best: Node<P> | undefined;
    for (let rung = TRUST_LEVELS.indexOf(floor); rung < TRUST_LEVELS.length; rung++) {
      const top = this.first(perRung[rung]!, exclude);
      if (top && (!best || before(top, best))) best = top;
    }
    return best?.p;
  }

  /** Indexed providers whose id starts with `prefix` (a whole id included), in no particular order. */
  withPrefix(prefix: string): P[] {
    const found: P[] = [];
    for (let at = this.lowerBound(prefix); at < this.ids.length && this.ids[at]!.startsWith(prefix); at++) found.push(this.nodes.get(this.ids[at]!)!.p);
    return found;
  }

  /** The first node of a heap not in `exclude`: the top, or a best-first walk as deep as the exclusions reach. */
  private first(heap: Slot<P>[], exclude: ReadonlySet<string> | undefined): Node<P> | undefined {
    const top = heap[0];
    if (!top || !exclude?.has(top.node.p.id)) return top?.node;
    const frontier = [0];
    while (frontier.length > 0) {
      let k = 0;
      for (let i = 1; i < frontier.length; i++) if (before(heap[frontier[i]!]!.node, heap[frontier[k]!]!.node)) k = i;
      const at = frontier[k]!;
      frontier[k] = frontier[frontier.length - 1]!;
      frontier.pop();
      const node = heap[at]!.node;
      if (!exclude.has(node.p.id)) return node;
      for (const child of [2 * at + 1, 2 * at + 2]) if (child < heap.length) frontier.push(child);
    }
    return undefined;
  }

  private unslot(slot: Slot<P>): void {
    const { heap } = slot;
    const last = heap.pop()!;
    if (last === slot) return;
    heap[slot.pos] = last;
    last.pos = slot.pos;
    this.down(this.up(last));
  }

  private up(slot: Slot<P>): Slot<P> {
    const { heap } = slot;
    while (slot.pos > 0) {
      const parent = heap[(slot.pos - 1) >> 1]!;
      if (!before(slot.node, parent.node)) break;
      this.swap(heap, slot.pos, parent.pos);
    }
    return slot;
  }

  private down(slot: Slot<P>): void {
    const { heap } = slot;
    for (;;) {
      const l = 2 * slot.pos + 1;
      const r = l + 1;
      let least = slot;
      if (l < heap.length && before(heap[l]!.node, least.node)) least = heap[l]!;
      if (r < heap.length && before(heap[r]!.node, least.node)) least = heap[r]!;
      if (least === slot) return;
      this.swap(heap, slot.pos, least.pos);
    }
  }

  private swap(heap: Slot<P>[], i: number, j: number): void {
    const a = heap[i]!;
    const b = heap[j]!;
    heap[i] = b;
    heap[j] = a;
    a.pos = j;
    b.pos = i;
  }

  private lowerBound(id: string): number {
    let lo = 0;
    let hi = this.ids.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.ids[mid]! < id) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

/**
 * What chooseProvider would choose over every indexed provider (SPEC §4.1), reading only what it must: a
 * pin, the providers its prefix matches (`view` gives their records); an unpinned request, the tops of its
 * alias's heaps. Throws the same errors.
 */
export function route<P extends Indexed>(index: ProviderIndex<P>, request: RouteRequest, exclude: readonly string[], view: (p: P) => Routable): P {
  const { alias, floor, pin, prefer, only } = request;
  if (pin !== undefined) return chooseProvider(index.withPrefix(pin).map((p) => ({ ...view(p), provider: p })), { alias, floor, pin }).provider;
  // a gateway-blind request's few candidates (at most three), each by its whole id: the first of them in the order
  // a caller's client chose them in, by the same function over what this copy knows now
  if (only !== undefined) {
    const candidates = only.flatMap((id) => index.withPrefix(id).filter((p) => p.id === id)).map((p) => ({ ...view(p), provider: p }));
    return chooseCandidates(candidates, { alias, floor, only, ...(prefer === undefined ? {} : { prefer }) }, 1, new Set(exclude))[0]!.provider;
  }
  const chosen = index.choose(alias, floor, exclude.length === 0 ? undefined : new Set(exclude), prefer);
  if (!chosen) throw noProvider(alias, floor);
  return chosen;
}
