// Random ids for requests and sessions, drawn from a pool of random bytes filled a few kilobytes at a time, as node's
// randomUUID does: a call into the CSPRNG for every 12 bytes cost a gateway more than the id's every other use. Each
// byte is handed out once; the bytes are the same CSPRNG's (randomFillSync), only fetched ahead.
import { randomFillSync } from "node:crypto";

const POOL = Buffer.alloc(4096);
let used = POOL.length;

/** `bytes` fresh random bytes (at most the pool's size), copied out of the pool. */
function take(bytes: number): Buffer {
  if (used + bytes > POOL.length) {
    randomFillSync(POOL);
    used = 0;
  }
  const out = Buffer.from(POOL.subarray(used, used + bytes));
  POOL.fill(0, used, used + bytes);
  used += bytes;
  return out;
}

/** `bytes` random bytes as lowercase hex. */
export const randomHex = (bytes: number): string => take(bytes).toString("hex");

/** `bytes` random bytes as unpadded base64url. */
export const randomBase64url = (bytes: number): string => take(bytes).toString("base64url");
