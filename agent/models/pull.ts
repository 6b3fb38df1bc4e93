// `svc-agent pull`: downloads an alias's pinned GGUF from the model hub at its pinned revision, resuming a
// partial download, and verifies size and SHA-256 before the file is moved into place.
import { createHash, type Hash } from "node:crypto";
import { existsSync, renameSync, rmSync, statSync } from "node:fs";
import { open as openFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import type { CatalogEntry } from "../../src/catalog.ts";
import { hashFileInto, sha256File } from "../../src/crypto/sha256-node.ts";
import type { VerifiedFiles } from "./verified-files.ts";
import { makeDirs } from "../../src/process/make-dir.ts";

export const DEFAULT_HUB_URL = "https://huggingface.co";

export interface PullProgress {
  start(total: number, already: number): void;
  update(done: number): void;
  stop(): void;
}

export interface PullOptions {
  entry: CatalogEntry;
  modelsDir: string;
  hubUrl?: string;
  verified?: VerifiedFiles;
  progress?: PullProgress;
  log?: (line: string) => void;
}

export type PullOutcome = { status: "present" | "downloaded"; path: string };

export class PullError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PullError";
  }
}

export function hubFileUrl(hubUrl: string, entry: CatalogEntry): string {
  const base = hubUrl.replace(/\/+$/, "");
  // the catalog allows only URL-safe hub names (src/catalog.ts); a file may sit in a folder of the repo
  return `${base}/${entry.hub_id}/resolve/${entry.revision}/${entry.file.split("/").map(encodeURIComponent).join("/")}`;
}

export async function pull(options: PullOptions): Promise<PullOutcome> {
  const { entry, modelsDir, log = () => {} } = options;
  const target = join(modelsDir, entry.file);
  makeDirs(dirname(target));
  const partial = `${target}.partial`;

  if (existsSync(target)) {
    const sha = options.verified ? await options.verified.sha256(target) : await sha256File(target);
    if (sha === entry.sha256) return { status: "present", path: target };
    log(`${target} does not match the pin (sha256 ${sha}); downloading it again`);
    rmSync(target);
  }

  let have = existsSync(partial) ? statSync(partial).size : 0;
  if (have > entry.size_bytes) {
    rmSync(partial); // longer than the pinned file: it cannot be a prefix of it
    have = 0;
  }
  const hash = createHash("sha256");
  if (have < entry.size_bytes) {
    const url = hubFileUrl(options.hubUrl ?? DEFAULT_HUB_URL, entry);
    const response = await open(url, have);
    // 206: the server continues where the partial ends; 200: it sends the whole file again
    const resumedFrom = response.status === 206 ? have : 0;
    if (resumedFrom > 0) log(`resuming ${entry.file} at byte ${resumedFrom}`);
    else if (have > 0) log("the server ignored the resume request; starting over");
    await hashFileInto(hash, partial, resumedFrom); // bytes kept on disk count toward the final hash
    await writeBody(response, partial, resumedFrom, hash, entry.size_bytes, options.progress);
  } else {
    await hashFileInto(hash, partial);
  }

  const size = statSync(partial).size;
  const sha = hash.digest("hex");
  if (size !== entry.size_bytes || sha !== entry.sha256) {
    rmSync(partial, { force: true });
    throw new PullError(
      `${entry.alias}: downloaded ${size} bytes with sha256 ${sha}, but the catalog pins ${entry.size_bytes} bytes with sha256 ${entry.sha256}. The partial download was deleted.`,
    );
  }
  renameSync(partial, target);
  options.verified?.remember(target, sha);
  return { status: "downloaded", path: target };
}

async function open(url: string, have: number): Promise<Response> {
  let response: Response;
  try {
    response = await fetch(url, { headers: have > 0 ? { range: `bytes=${have}-` } : {}, redirect: "follow" });
  } catch (err) {
    const cause = (err as Error & { cause?: Error }).cause;
    throw new PullError(`cannot reach ${url}: ${cause?.message ?? (err as Error).message}`);
  }
  if (response.status !== 200 && response.status !== 206) {
    throw new PullError(`GET ${url} answered ${response.status} ${response.statusText}`);
  }
  if (!response.body) throw new PullError(`GET ${url} returned no body`);
  return response;
}

/** Streams the body into the partial file (appending from `from`), hashing and reporting as it goes. */
async function writeBody(
  response: Response,
  partial: string,
  from: number,
  hash: Hash,
  total: number,
  progress?: PullProgress,
): Promise<void> {
  let done = from;
  progress?.start(total, from);
  // each chunk is on disk before it is counted, so an interruption keeps every byte it reports (a stream
  // pipeline would destroy the file stream on a network error and drop writes still buffered)
  const file = await openFile(partial, from > 0 ? "a" : "w");
  try {
    for await (const chunk of Readable.fromWeb(response.body as NodeReadableStream<Uint8Array>)) {
      await file.write(chunk as Buffer);
      hash.update(chunk as Buffer);
      done += (chunk as Buffer).length;
      progress?.update(done);
    }
  } catch (err) {
    throw new PullError(`download interrupted after ${done} bytes (${(err as Error).message}); run pull again to resume`);
  } finally {
    await file.close();
    progress?.stop();
  }
}
