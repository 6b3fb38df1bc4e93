// Where each catalog alias's GGUF lives on this machine, whether it is there, whether it matches its pin,
// and which aliases this machine can offer (file present and enough memory).
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { findAlias, type Catalog, type CatalogEntry } from "../../src/catalog.ts";
import type { OnBytes } from "../../src/crypto/sha256-node.ts";
import { VerifiedFiles } from "./verified-files.ts";
import { DEFAULT_MODELS_DIR } from "./models-dir.ts";

export class ModelFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ModelFileError";
  }
}

export interface ModelStoreOptions {
  catalog: Catalog;
  modelsDir?: string;
  /** `--model ALIAS=PATH`: a file outside the models dir; it must still match the alias's pin. */
  overrides?: ReadonlyMap<string, string>;
  verified?: VerifiedFiles;
}

/** Parses repeated `--model ALIAS=PATH` flags against the catalog. */
export function parseModelOverrides(catalog: Catalog, flags: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const flag of flags) {
    const eq = flag.indexOf("=");
    const alias = flag.slice(0, eq);
    if (eq <= 0 || eq === flag.length - 1) throw new ModelFileError(`--model ${flag}: expected ALIAS=PATH`);
    if (!findAlias(catalog, alias)) throw new ModelFileError(`--model ${flag}: ${alias} is not a catalog alias`);
    out.set(alias, flag.slice(eq + 1));
  }
  return out;
}

export class ModelStore {
  readonly catalog: Catalog;
  readonly modelsDir: string;
  private readonly overrides: ReadonlyMap<string, string>;
  private readonly verified: VerifiedFiles;

  constructor(options: ModelStoreOptions) {
    this.catalog = options.catalog;
    this.modelsDir = options.modelsDir ?? DEFAULT_MODELS_DIR;
    this.overrides = options.overrides ?? new Map();
    this.verified = options.verified ?? new VerifiedFiles();
  }

  entry(alias: string): CatalogEntry {
    const entry = findAlias(this.catalog, alias);
    if (!entry) throw new ModelFileError(`${alias} is not a catalog alias`);
    return entry;
  }

  pathFor(alias: string): string {
    return this.overrides.get(alias) ?? join(this.modelsDir, this.entry(alias).file);
  }

  isPresent(alias: string): boolean {
    return existsSync(this.pathFor(alias));
  }

  /** Aliases this machine can serve: the file is present and `min_memory_gb` fits in `memoryGb`. */
  offered(memoryGb: number): string[] {
    return this.catalog.models.filter((m) => m.min_memory_gb <= memoryGb && this.isPresent(m.alias)).map((m) => m.alias);
  }

  /**
   * The offered aliases whose files match their pins, and a ModelFileError for each that does not: a file that
   * fails its pin is never advertised, so no caller is routed to a provider that cannot load it.
   */
  async pinnedOffered(memoryGb: number): Promise<{ aliases: string[]; refused: ModelFileError[] }> {
    const aliases: string[] = [];
    const refused: ModelFileError[] = [];
    for (const alias of this.offered(memoryGb)) {
      try {
        await this.verify(alias);
        aliases.push(alias);
      } catch (err) {
        if (!(err instanceof ModelFileError)) throw err;
        refused.push(err);
      }
    }
    return { aliases, refused };
  }

  /**
   * Checks the alias's file against its pin (size first, then SHA-256, cached by path + size + mtime) and
   * returns its path. Throws ModelFileError, naming both hashes, when it does not match.
   */
  async verify(alias: string, onBytes?: OnBytes): Promise<{ path: string; sha256: string }> {
    const entry = this.entry(alias);
    const path = this.pathFor(alias);
    if (!existsSync(path)) {
      throw new ModelFileError(`${alias}: model file ${path} is missing (run: svc-agent pull ${alias})`);
    }
    const size = statSync(path).size;
    if (size !== entry.size_bytes) {
      throw new ModelFileError(
        `${alias}: ${path} is ${size} bytes but the catalog pins ${entry.size_bytes}; refusing to load it`,
      );
    }
    const sha256 = await this.verified.sha256(path, onBytes);
    if (sha256 !== entry.sha256) {
      throw new ModelFileError(
        `${alias}: ${path} has sha256 ${sha256} but the catalog pins ${entry.sha256}; refusing to load it`,
      );
    }
    return { path, sha256 };
  }
}
