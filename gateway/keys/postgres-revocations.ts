// Every replica hears every revocation: one connection LISTENs on the channel the api_keys trigger NOTIFYs, and
// a lost connection is re-made (the server restarted) with a catch-up read of what was revoked meanwhile.
import pg from "pg";
import { REVOKED_CHANNEL } from "./postgres-schema.ts";

const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 2_000;
/** Revocations a little older than the last one heard are read again on reconnect: clocks of replicas differ. */
const CATCH_UP_SLACK_MS = 10_000;

export class RevocationListener {
  private client: pg.Client | undefined;
  private closed = false;
  private retryMs = RETRY_MIN_MS;
  private timer: NodeJS.Timeout | undefined;
  /** When this listener was last known to be hearing everything. */
  private heardUntil = Date.now();

  constructor(
    private readonly url: string,
    private readonly types: pg.CustomTypesConfig,
    private readonly drop: (hash: string) => void,
  ) {}

  /** Listens once; throws when the first connection fails (the store's open has just succeeded, so it rarely does). */
  async start(): Promise<void> {
    await this.connect();
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, types: this.types, connectionTimeoutMillis: 2_000 });
    client.on("notification", (message) => {
      if (message.channel === REVOKED_CHANNEL && message.payload) this.drop(message.payload);
    });
    // a server restart ends the connection: listen again, and read what this replica may have missed
    client.on("error", () => this.lost(client));
    client.on("end", () => this.lost(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${REVOKED_CHANNEL}`);
      const since = this.heardUntil - CATCH_UP_SLACK_MS;
      const { rows } = await client.query<{ hash: string }>("SELECT secret_sha256 AS hash FROM api_keys WHERE revoked_at >= $1", [since]);
      for (const { hash } of rows) this.drop(hash);
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.retryMs = RETRY_MIN_MS;
  }

  private lost(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.heardUntil = Date.now();
    client.end().catch(() => undefined);
    this.retry();
  }

  private retry(): void {
    if (this.closed || this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.connect().catch(() => {
        this.retryMs = Math.min(this.retryMs * 2, RETRY_MAX_MS);
        this.retry();
      });
    }, this.retryMs);
    this.timer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }
}
