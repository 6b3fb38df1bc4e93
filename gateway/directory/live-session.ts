// One session in flight at the gateway, as its messages arrive from whatever carries them: each frame counted
// against the session's wire budget and timed against its deadlines on arrival, so a caller who reads slowly
// changes neither what a provider may send nor how long it may take. What it holds, unread or kept, is counted in
// the gateway's ledger (held-bytes.ts), whose bounds may end it. A breach stops the provider at once and drops what
// it sent.
import { ApiError } from "../../src/errors.ts";
import type { AnswerPiece } from "../../src/receipt/answer-record.ts";
import type { ToGateway } from "../../src/wire/gateway.ts";
import { CallerGone } from "../http/caller-gone.ts";
import { pieceBytes, WireBudget } from "../../src/session/answer-bounds.ts";
import { nextDeadline, type SessionDeadlines, type SessionTimes } from "./deadlines.ts";
import { HELD_BYTES_PER_MESSAGE, type Cut, type HeldCount, type HeldLedger } from "./held-bytes.ts";
import { Mailbox } from "./mailbox.ts";
import type { Breach } from "./provider-faults.ts";

/** What the coordinator says of one session. */
export type SessionMessage = Extract<ToGateway, { id: string }>;

/** What a message costs while it waits for the session's reader. */
const heldBytes = (message: SessionMessage): number => (message.t === "frame" ? message.data.length : 0) + HELD_BYTES_PER_MESSAGE;

export class LiveSession {
  /** The session's messages, in order, for its reader (through `take`); failed at once on a breach or a cut. */
  readonly box = new Mailbox<SessionMessage>();
  /** Set once the session broke a bound on arrival (too many bytes, a missed deadline): it is over. */
  breach?: Breach;
  /** Set once the gateway's ledger cut it: its caller left too much unread, or it held the most past the total. */
  cut?: Cut;
  private readonly times: SessionTimes = {};
  private readonly budget: WireBudget;
  private readonly held: HeldCount;
  private timer?: NodeJS.Timeout;

  constructor(
    wireBytes: number,
    private readonly deadlines: SessionDeadlines,
    /** Stops the session on the provider. */
    private readonly cancel: () => void,
    ledger: HeldLedger,
    /** The caller takes the answer whole (not a stream): it hears any end of the session as an answer, even a cut. */
    private readonly whole: boolean,
    /** The ledger cut the session (the provider is stopped already): say so, and let a stream's caller go. */
    private readonly onCut: (cut: Cut, gone?: CallerGone) => void,
  ) {
    this.budget = new WireBudget(wireBytes);
    this.held = ledger.open((cut) => this.ended(cut));
  }

  arrive(message: SessionMessage): void {
    if (this.breach !== undefined || this.cut !== undefined) return;
    if (message.t === "started" || message.t === "frame") {
      const now = performance.now();
      const first = message.t === "frame" && this.times.lastFrame === undefined;
      if (message.t === "started") this.times.started = now;
      else this.times.lastFrame = now;
      if (message.t === "frame" && !this.budget.take(message.data.length)) return this.broke({ kind: "answer_bounds", why: "sent more than its answer's bounds allow" });
      // later frames only push the deadline back: the timer, when it fires, reads where they left it
      if (message.t === "started" || first) this.watch();
      if (message.t === "started") return;
    } else this.stopTimer(); // the session ended on the provider's side, or never began
    this.box.post(message);
    this.held.arrived(heldBytes(message));
  }

  /** The next message, for the session's reader. */
  async take(signal: AbortSignal): Promise<SessionMessage> {
    const message = await this.box.take(signal);
    this.held.taken(heldBytes(message));
    return message;
  }

  /** A piece of the answer passed on, which the session keeps until its receipt is checked. */
  keep(piece: AnswerPiece): void {
    this.held.keep(pieceBytes(piece));
  }

  /** The session is over for its reader: no deadline runs on, and nothing it held is counted. */
  close(): void {
    this.stopTimer();
    this.held.close();
  }

  private stopTimer(): void {
    clearTimeout(this.timer);
  }

  /** Arms the timer for the next deadline; when it fires, a deadline that frames have moved on is re-armed. */
  private watch(): void {
    this.stopTimer();
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

  /**
   * Not the provider's doing: it is stopped and never charged, and the backlog goes. A stream's caller is let go, its
   * connection closed (nothing more can reach one who does not read, and a stream reset is how a proxy sheds a stream
   * it holds too much for); a caller waiting for a whole answer hears 503 overloaded.
   */
  private ended(cut: Cut): void {
    this.cut = cut;
    this.stopTimer();
    this.cancel();
    const gone = this.whole && cut.bound === "total" ? undefined : new CallerGone(cut.bound === "unread" ? "caller_too_slow" : "overloaded");
    this.box.failNow(gone ?? new ApiError("overloaded", "The gateway holds as much as it may for the answers in flight, and this one held the most; retry it."));
    this.onCut(cut, gone);
  }
}
