// Fewer sealed frames per session: pieces produced in the same tick go out as one frame, and a non-stream
// (`whole`) session sends its whole answer in the frame that carries the receipt. Every frame is sealed and
// relayed through the coordinator, so each one saved is an AEAD seal, a JSON round and two socket writes.
import type { AnswerPiece } from "../../src/receipt/answer-record.ts";
import type { SessionFrame } from "../../src/session/sealed-request.ts";
import { logprobsSize } from "../../src/receipt/logprobs.ts";

/** A buffer this large goes out at once, whatever the mode: an agent frame must stay well under 1 MiB sealed. */
export const MAX_BATCH_CHARS = 64 * 1024;
/**
 * A whole answer's pieces held this long go out with the next one, so the gateway hears from a session that is
 * working (its first-token and idle deadlines, gateway/directory/deadlines.ts, are far longer).
 */
export const MAX_HOLD_MS = 5_000;

/** About how much of a frame a piece takes, as JSON: its text, or each logprob entry's token, bytes and number. */
function pieceChars(piece: AnswerPiece): number {
  if ("text" in piece) return piece.text.length;
  if (piece.type === "tool_call") return piece.name.length + piece.id.length;
  return logprobsSize(piece.logprobs);
}

export class FrameBatcher {
  private pieces: AnswerPiece[] = [];
  private chars = 0;
  private scheduled?: NodeJS.Immediate;
  /** When the oldest piece held was pushed. */
  private heldSince = 0;

  constructor(
    private readonly send: (frame: SessionFrame) => void,
    /** The caller takes the answer in one piece: hold everything for the done frame. */
    private readonly whole: boolean,
    private readonly now: () => number = () => performance.now(),
  ) {}

  push(piece: AnswerPiece): void {
    if (this.whole && this.pieces.length === 0) this.heldSince = this.now();
    this.pieces.push(piece);
    this.chars += pieceChars(piece);
    if (this.chars >= MAX_BATCH_CHARS || (this.whole && this.now() - this.heldSince >= MAX_HOLD_MS)) this.flush();
    else if (!this.whole) this.scheduled ??= setImmediate(() => this.flush());
  }

  /** Sends what is held: one piece as itself, several as one `pieces` frame. */
  flush(): void {
    if (this.scheduled) clearImmediate(this.scheduled);
    this.scheduled = undefined;
    const pieces = this.take();
    if (pieces.length === 1) this.send(pieces[0]!);
    else if (pieces.length > 1) this.send({ type: "pieces", pieces });
  }

  /** The last frame: a whole session's answer rides with its receipt; a stream's pieces go first. */
  done(frame: Extract<SessionFrame, { type: "done" }>): void {
    if (!this.whole) {
      this.flush();
      this.send(frame);
      return;
    }
    const pieces = this.take();
    this.send(pieces.length > 0 ? { ...frame, pieces } : frame);
  }

  /** Stops a pending flush (the session was cancelled: nothing more goes out). */
  drop(): void {
    if (this.scheduled) clearImmediate(this.scheduled);
    this.scheduled = undefined;
    this.take();
  }

  private take(): AnswerPiece[] {
    const pieces = this.pieces;
    this.pieces = [];
    this.chars = 0;
    return pieces;
  }
}
