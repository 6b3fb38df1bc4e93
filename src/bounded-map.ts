// A Map that keeps at most `limit` entries: a write makes its key the newest and, past the limit, forgets the
// oldest, so keys a stranger chooses (provider ids, addresses, key hashes, schemas) cannot grow it without bound.

export class BoundedMap<K, V> extends Map<K, V> {
  constructor(readonly limit: number) {
    super();
  }

  /** Sets `key` as the newest entry; past the limit the oldest is forgotten. */
  override set(key: K, value: V): this {
    super.delete(key);
    super.set(key, value);
    if (this.size > this.limit) super.delete(this.keys().next().value as K);
    return this;
  }

  /** The value of `key`, which becomes the newest entry: the least recently used is forgotten first. */
  touch(key: K): V | undefined {
    const value = super.get(key);
    if (value !== undefined) this.set(key, value);
    return value;
  }
}
