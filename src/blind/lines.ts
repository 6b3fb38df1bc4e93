// The relayed answer of a gateway-blind request (SEALING.md), as the gateway writes it and the caller reads it: one
// line each for the candidate that answers, a sealed frame (its last one marked final), a keepalive, or the gateway's
// own failure. The frames are opaque to the gateway; the line framing is all it adds.
import type { ErrorEnvelope } from "../errors.ts";

export type RelayLine =
  | { type: "provider"; provider: string }
  | { type: "frame"; data: string; final: boolean }
  | { type: "keepalive" }
  | { type: "error"; envelope: ErrorEnvelope };

/** The longest line a reader takes: a frame the coordinator relays is at most 1 MiB as base64, so this is ample. */
export const MAX_LINE_BYTES = 2 * 1024 * 1024;

export function lineText(line: RelayLine): string {
  switch (line.type) {
    case "provider":
      return `p ${line.provider}\n`;
    case "frame":
      return `${line.final ? "F" : "f"} ${line.data}\n`;
    case "keepalive":
      return "k\n";
    case "error":
      return `e ${JSON.stringify(line.envelope)}\n`;
  }
}

const PROVIDER = /^p ([0-9a-f]{64})$/;
const FRAME = /^([fF]) ([A-Za-z0-9_-]+)$/;

/** Reads lines as the text arrives in pieces; throws on a line it does not know or one past MAX_LINE_BYTES. */
export class LineReader {
  private rest = "";

  push(text: string): RelayLine[] {
    const parts = (this.rest + text).split("\n");
    this.rest = parts.pop()!;
    if (this.rest.length > MAX_LINE_BYTES) throw new Error("a relayed line is longer than any frame");
    return parts.map(readLine);
  }

  /** The stream ended: anything left over is a line cut short. */
  end(): void {
    if (this.rest !== "") throw new Error("the relayed answer ends in the middle of a line");
  }
}

function readLine(line: string): RelayLine {
  if (line === "k") return { type: "keepalive" };
  const provider = PROVIDER.exec(line);
  if (provider) return { type: "provider", provider: provider[1]! };
  const frame = FRAME.exec(line);
  if (frame) return { type: "frame", data: frame[2]!, final: frame[1] === "F" };
  if (line.startsWith("e ")) {
    const envelope = JSON.parse(line.slice(2)) as ErrorEnvelope;
    if (typeof envelope?.error?.code !== "string") throw new Error("a relayed error line holds no error envelope");
    return { type: "error", envelope };
  }
  throw new Error(`a relayed line of no known kind (${JSON.stringify(line.slice(0, 16))}…)`);
}
