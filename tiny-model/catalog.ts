// A catalog whose aliases pin freshly written tiny random-weight models: for tests, the benchmark and the
// `npm start` demo when no real model has been downloaded.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseCatalog, type Catalog, type CatalogEntry } from "../src/catalog.ts";
import { TINY_EMBEDDING_LENGTH, writeTinyModel, type TinyModelFile, type TinyModelOptions } from "./gguf.ts";

export interface TinyAlias extends TinyModelOptions {
  alias: string;
  min_memory_gb?: number;
  /** "embedding": a last-token-pooled model whose entry says so, with its vector length and `matryoshka_min`. */
  kind?: "embedding";
  matryoshka_min?: number;
}

export interface WrittenTinyCatalog {
  modelsDir: string;
  catalogPath: string;
  catalog: Catalog;
  files: Record<string, TinyModelFile>;
}

/** Writes each alias's tiny model into `<dir>/models` and a catalog pinning their sha256 to `<dir>/catalog.json`. */
export function writeTinyCatalog(dir: string, aliases: readonly TinyAlias[], hubOwner = "svc-test"): WrittenTinyCatalog {
  const modelsDir = join(dir, "models");
  mkdirSync(modelsDir, { recursive: true });
  const files: Record<string, TinyModelFile> = {};
  const models: CatalogEntry[] = aliases.map(({ alias, min_memory_gb = 1, kind, matryoshka_min, ...options }, i) => {
    const file = `tiny-${alias}.gguf`;
    const embedding = kind === "embedding";
    const written = writeTinyModel(join(modelsDir, file), { ...options, ...(embedding ? { lastTokenPooling: true } : {}) });
    files[alias] = written;
    return {
      alias,
      hub_id: `${hubOwner}/tiny-${alias}-GGUF`,
      file,
      revision: String(i + 1).padStart(40, "0"),
      sha256: written.sha256,
      size_bytes: written.sizeBytes,
      min_memory_gb,
      license: "Apache-2.0",
      ...(embedding ? { kind, embedding_dimensions: options.embedding ?? TINY_EMBEDDING_LENGTH, ...(matryoshka_min === undefined ? {} : { matryoshka_min }) } : {}),
    };
  });
  const json = { version: 1, default: aliases[0]?.alias, models };
  const catalogPath = join(dir, "catalog.json");
  writeFileSync(catalogPath, JSON.stringify(json, null, 2));
  return { modelsDir, catalogPath, catalog: parseCatalog(json), files };
}
