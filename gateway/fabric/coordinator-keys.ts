// The coordinators a gateway on NATS trusts (DESIGN §11): the directory keys in `--coordinator-keys FILE` (one hex
// Ed25519 public key per line, as `svc-gateway directory-key` prints them), and its own embedded coordinator's. The
// file is read at start, and again (at most once a second) when a key it does not hold signs something and the file
// has changed since, so a coordinator added to the file is trusted without restarting the gateways.
import { statSync } from "node:fs";
import { loadKeyList } from "../../src/trust/anchor-files.ts";

/** How often an unknown key may send the gateway to look at the file again. */
export const RELOAD_MS = 1_000;

export class CoordinatorKeys {
  private keys: Set<string>;
  private mtimeMs = 0;
  private looked = 0;

  /** Throws, naming the flag, when the file cannot be read or holds a line that is not a key. */
  constructor(
    private readonly path: string | undefined,
    private readonly own: readonly string[] = [],
    private readonly now: () => number = Date.now,
  ) {
    this.keys = this.read(true)!;
  }

  /** How many keys are trusted now. */
  get size(): number {
    return this.keys.size;
  }

  has(key: string): boolean {
    if (this.keys.has(key)) return true;
    if (this.path === undefined || this.now() - this.looked < RELOAD_MS) return false;
    this.keys = this.read(false) ?? this.keys;
    return this.keys.has(key);
  }

  /** The file's keys and the own ones; on a reload, undefined when the file is unchanged or now unreadable (the old keys stand). */
  private read(first: boolean): Set<string> | undefined {
    this.looked = this.now();
    if (this.path === undefined) return new Set(this.own);
    try {
      const mtimeMs = statSync(this.path).mtimeMs;
      if (!first && mtimeMs === this.mtimeMs) return undefined;
      this.mtimeMs = mtimeMs;
      return new Set([...loadKeyList(this.path), ...this.own]);
    } catch (err) {
      if (!first) return undefined;
      const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      throw new Error(`--coordinator-keys ${this.path}: ${reason === "ENOENT" ? "cannot read it (ENOENT)" : reason}`);
    }
  }
}
