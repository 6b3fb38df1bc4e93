// SHA-256 of files and bytes; files are streamed so a multi-GB model file never sits in memory.
import { createHash, type Hash } from "node:crypto";
import { createReadStream } from "node:fs";

/** Bytes hashed so far, after each chunk: a progress bar's feed. */
export type OnBytes = (done: number) => void;

/** Feeds a file (or its first `end` bytes) into `hash`. */
export async function hashFileInto(hash: Hash, path: string, end?: number, onBytes?: OnBytes): Promise<void> {
  if (end === 0) return;
  const stream = createReadStream(path, end === undefined ? {} : { start: 0, end: end - 1 });
  let done = 0;
  for await (const chunk of stream) {
    hash.update(chunk as Buffer);
    done += (chunk as Buffer).length;
    onBytes?.(done);
  }
}

/** Lowercase hex SHA-256 of bytes, or of a string's UTF-8 bytes. */
export function sha256Hex(data: Uint8Array | string): string {
  return createHash("sha256").update(data).digest("hex");
}

export async function sha256File(path: string, onBytes?: OnBytes): Promise<string> {
  const hash = createHash("sha256");
  await hashFileInto(hash, path, undefined, onBytes);
  return hash.digest("hex");
}
