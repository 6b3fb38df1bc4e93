// Revocations made by another process on the same SQLite file (`svc-gateway keys revoke` beside a running
// gateway) reach the gateway's key cache by a cheap indexed poll, off the request path.

/** How often the file is asked; well inside the second a revocation may take to reach every cache. */
export const REVOCATION_POLL_MS = 250;

/**
 * Calls `drop` for each key revoked at or after the last instant seen (from a little before now on start, so
 * a clock step of the writer does not hide one). Dropping is idempotent, so a row seen twice costs nothing.
 */
export function pollRevocations(read: (since: number) => { hash: string; at: number }[], drop: (hash: string) => void): { stop(): void } {
  let since = Date.now() - 5_000;
  const timer = setInterval(() => {
    try {
      for (const { hash, at } of read(since)) {
        drop(hash);
        since = Math.max(since, at);
      }
    } catch {
      // a busy or closing file: the next pass asks again
    }
  }, REVOCATION_POLL_MS).unref();
  return { stop: () => clearInterval(timer) };
}
