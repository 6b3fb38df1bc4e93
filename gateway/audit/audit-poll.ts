// Every replica reads the audits every other one concluded (issue 43 item 4, AUDIT-DESIGN §5 "Replicas"): the store's
// rows are polled every AUDIT_POLL_MS, as revocations are (gateway/keys/revocation-poll.ts), the new ones counted in
// the records and the bars replaced by the store's (so an operator's `audit clear` lifts one everywhere). On NATS
// another replica's hint asks for a pass now; a hint carries nothing that is applied, so a forged one bars no one.
import type { AuditStore } from "../keys/audit-store.ts";
import type { AuditRecords } from "./records.ts";

export const AUDIT_POLL_MS = 2_000;
/** Rows are asked again this far back: another replica's clock, and its write, may lag this one's. */
const SLACK_MS = 10_000;
/** Hinted passes start at most this often, however many hints arrive. */
const HINT_GAP_MS = 200;

export interface AuditPoll {
  /** A pass as soon as the last one allows: another replica concluded an audit. */
  hint(): void;
  /** The first pass, which reads every row; resolves when it is done (it never throws). */
  readonly ready: Promise<void>;
  stop(): void;
}

export function pollAudits(store: AuditStore, records: AuditRecords, syncBars: (bars: Map<string, string>, returned: Set<string>) => void, onError: (err: Error) => void): AuditPoll {
  let since = 0;
  let running: Promise<void> | undefined;
  let again = false;
  let hinted: NodeJS.Timeout | undefined;
  let lastEnd = 0;
  let failing = false;
  let stopped = false;

  const read = async () => {
    const started = Date.now();
    // every id the store returned, cleared ones included: this gateway's own bar of one is the store's from now on
    const returned = new Set<string>();
    for (const row of await store.since(Math.max(0, since - SLACK_MS))) {
      returned.add(row.id);
      records.note(row.provider, row.id, row.verdict, Math.floor(row.at / 1000), row.evidenceSha256);
    }
    const bars = new Map<string, string>();
    const uncleared = await store.bars();
    for (const row of uncleared) for (const identity of row.bars) if (!bars.has(identity)) bars.set(identity, row.id);
    if (stopped) return;
    syncBars(bars, returned);
    records.syncBarring(uncleared);
    since = started;
    records.forgetSeenBefore(since - 2 * SLACK_MS);
  };
  const pass = (): Promise<void> => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        try {
          await read();
          failing = false;
        } catch (err) {
          // the store away: the bars read last stand, and the next pass asks again; said once a streak
          if (!failing) onError(err as Error);
          failing = true;
        }
      } while (again && !stopped);
      lastEnd = Date.now();
      running = undefined;
    })();
    return running;
  };
  const timer = setInterval(() => void pass(), AUDIT_POLL_MS).unref();
  return {
    ready: pass(),
    hint: () => {
      if (hinted !== undefined || stopped) return;
      hinted = setTimeout(() => {
        hinted = undefined;
        void pass();
      }, Math.max(0, lastEnd + HINT_GAP_MS - Date.now()));
      hinted.unref();
    },
    stop: () => {
      stopped = true;
      clearInterval(timer);
      clearTimeout(hinted);
    },
  };
}
