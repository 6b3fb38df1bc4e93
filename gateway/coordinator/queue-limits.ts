// The bounds on the coordinator's queues (registry.ts) and their defaults, which `svc-gateway coordinator`'s
// flags override.

/** The bounds that keep one gateway or one burst from wedging or flooding the queues. */
export interface QueueLimits {
  /** Sessions waiting in front of one provider (`--max-queue-per-provider`). */
  queuePerProvider: number;
  /** Sessions waiting for one alias over all its providers (`--max-queue-per-alias`). */
  queuePerAlias: number;
  /** The longest a session waits in a queue before it is answered 503 overloaded (`--max-queued-ms`). */
  queuedMs: number;
}

export const DEFAULT_QUEUE_LIMITS: QueueLimits = {
  queuePerProvider: 32,
  queuePerAlias: 1_024,
  queuedMs: 120_000,
};

/** Until a provider has finished a session, the wait a full queue advises. */
export const UNKNOWN_SERVICE_MS = 1_000;
