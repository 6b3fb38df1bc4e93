// Values derived from a text, kept by that text, bounded: importing a public key into node's crypto costs as much as
// the operation that uses it, and hashing a signing key into its provider id as much as the rest of a receipt's
// checks bar the signature; a gateway does both for the same few providers on every request. Portable, like the
// rest of src/receipt/, so the receipt checks keep one too.

export class Kept<V> {
  private readonly values = new Map<string, V>();

  /** At most `kept` values; past that the oldest goes, so texts seen once (an ephemeral key) cannot grow it. */
  constructor(
    private readonly kept: number,
    private readonly load: (text: string) => V,
  ) {}

  /** The value for `text`, derived on first use; kept values are shared by every caller, so they must be immutable. */
  get(text: string): V {
    let value = this.values.get(text);
    if (value === undefined) {
      value = this.load(text);
      if (this.values.size >= this.kept) this.values.delete(this.values.keys().next().value!);
      this.values.set(text, value);
    }
    return value;
  }
}
