// Waiting work taken in turns by tenant (issue 41): each tenant's items in arrival order, the tenants in rotation,
// so one tenant's flood waits behind itself and everyone else gets the next turn.

export class FairQueue<T> {
  private readonly lines = new Map<string, T[]>();
  /** Tenants with waiting items, the next turn's first. */
  private readonly turns: string[] = [];
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** Items `tenant` has waiting. */
  waiting(tenant: string): number {
    return this.lines.get(tenant)?.length ?? 0;
  }

  push(tenant: string, item: T): void {
    let line = this.lines.get(tenant);
    if (line === undefined) {
      line = [];
      this.lines.set(tenant, line);
      this.turns.push(tenant);
    }
    line.push(item);
    this.count++;
  }

  /** The next turn's tenant's oldest item; that tenant then goes to the back of the rotation. */
  shift(): T | undefined {
    const tenant = this.turns.shift();
    if (tenant === undefined) return undefined;
    const line = this.lines.get(tenant)!;
    const item = line.shift()!;
    this.count--;
    if (line.length > 0) this.turns.push(tenant);
    else this.lines.delete(tenant);
    return item;
  }

  /** Takes `item` out of the line; false when it was not waiting. */
  remove(tenant: string, item: T): boolean {
    const line = this.lines.get(tenant);
    const at = line?.indexOf(item) ?? -1;
    if (line === undefined || at < 0) return false;
    line.splice(at, 1);
    this.count--;
    if (line.length === 0) {
      this.lines.delete(tenant);
      this.turns.splice(this.turns.indexOf(tenant), 1);
    }
    return true;
  }

  /** Every waiting item, emptying the queue. */
  drain(): T[] {
    const all = [...this.lines.values()].flat();
    this.lines.clear();
    this.turns.length = 0;
    this.count = 0;
    return all;
  }
}
