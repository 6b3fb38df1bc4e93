// Imported keys kept by their text: importing a public key into node's crypto costs as much as the operation that
// uses it, and a gateway seals to and checks receipts by the same few providers' keys on every request.
import type { KeyObject } from "node:crypto";

export class KeyCache {
  private readonly keys = new Map<string, KeyObject>();

  /** At most `kept` keys; past that the oldest goes, so keys seen once (an ephemeral key) cannot grow it. */
  constructor(
    private readonly kept: number,
    private readonly load: (text: string) => KeyObject,
  ) {}

  /** The key for `text`, imported on first use; a KeyObject is immutable, so one serves every caller. */
  get(text: string): KeyObject {
    let key = this.keys.get(text);
    if (key === undefined) {
      key = this.load(text);
      if (this.keys.size >= this.kept) this.keys.delete(this.keys.keys().next().value!);
      this.keys.set(text, key);
    }
    return key;
  }
}
