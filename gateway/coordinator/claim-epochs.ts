// Where a coordinator on NATS gets the epoch it claims a provider with (nats-gateways.ts): a number from state the
// coordinators share, so the later claim is the greater one whatever each machine's clock says. PostgreSQL's sequence
// (gateway/keys/postgres-epochs.ts) is the one in use; a unit test gives a fake.

export interface ClaimEpochs {
  /** A number greater than any handed out before, to any coordinator; rejects while the shared state is away. */
  next(): Promise<number>;
}

/** How long a coordinator waits before asking again for an epoch the shared state could not give: doubling to the max. */
export const EPOCH_RETRY_MS = 1_000;
export const EPOCH_RETRY_MAX_MS = 8_000;

/**
 * Whether this coordinator's hold on a provider, claimed with `mine` (undefined while its epoch is still being
 * fetched), yields to coordinator `other`'s claim with `theirs`: the greater epoch is the newer connection and wins.
 * A hold without an epoch yields to any claim, so it can never beat one the shared state ordered. Equal epochs (the
 * shared state never gives one twice) fall to the greater coordinator id, so both sides agree.
 */
export function yieldsTo(mine: number | undefined, theirs: number, me: string, other: string): boolean {
  return mine === undefined || mine < theirs || (mine === theirs && me < other);
}
