// One session in flight at the gateway, as its messages arrive from whatever carries them: each frame counted
// against the session's wire budget and timed against its deadlines on arrival, so a caller who reads slowly
// changes neither what a provider may send nor how long it may take, and never makes the gateway hold more than
// the budget. A breach stops the provider at once and drops what it sent.
import { ApiError } from "../../src/errors.ts";
import type { ToGateway } from "../../src/wire/gateway.ts";
import { WireBudget } from "../../src/session/answer-bounds.ts";
import { nextDeadline, type SessionDeadlines, type SessionTimes } from "./deadlines.ts";
import { Mailbox } from "./mailbox.ts";
import type { Breach } from "./provider-faults.ts";

/** What the coordinator says of one session. */
export type SessionMessage = Extract<ToGateway, { id: string }>;

export class LiveSession {
  /** The session's messages, in order, for its reader; failed at once on a breach. */
  readonly box = new Mailbox<SessionMessage>();
  /** Set once the session broke a bound on arrival (too many bytes, a missed deadline): it is over. */
  breach?: Breach;
  private readonly times: SessionTimes = {};
  private readonly budget: WireBudget;
  private timer?: NodeJS.Timeout;

  constructor(
    wireBytes: number,
    private readonly deadlines: SessionDeadlines,
    /** Stops the session on the provider. */
    private readonly cancel: () => void,
  ) {
    this.budget = new WireBudget(wireBytes);
  }

  arrive(message: SessionMessage): void {
    if (this.breach !== undefined) return;
    if (message.t === "started" || message.t === "frame") {
      const now = performance.now();
      const first = message.t === "frame" && this.times.lastFrame === undefined;
      if (message.t === "started") this.times.started = now;
      else this.times.lastFrame = now;
      if (message.t === "frame" && !this.budget.take(message.data.length)) return this.broke({ kind: "answer_bounds", why: "sent more than its answer's bounds allow" });
      // later frames only push the deadline back: the timer, when it fires, reads where they left it
      if (message.t === "started" || first) this.watch();
      if (message.t === "started") return;
    } else this.close(); // the session ended on the provider's side, or never began
    this.box.post(message);
  }

  /** The session is over for its reader: no deadline runs on. */
  close(): void {
    clearTimeout(this.timer);
  }

  /** Arms the timer for the next deadline; when it fires, a deadline that frames have moved on is re-armed. */
  private watch(): void {
    clearTimeout(this.timer);
    const next = nextDeadline(this.deadlines, this.times);
    if (next === undefined) return;
    this.timer = setTimeout(() => {
      const due = nextDeadline(this.deadlines, this.times);
      if (due !== undefined && due.at <= performance.now()) this.broke({ kind: "deadline", why: due.breach });
      else this.watch();
    }, Math.max(0, next.at - performance.now()));
  }

  private broke(breach: Breach): void {
    this.breach = breach;
    this.close();
    this.cancel();
    this.box.failNow(new ApiError("provider_error", "the session broke its bounds"));
  }
}
