// Newline-delimited text from a stream, one line at a time, never holding more than a bound: a line past it is
// reported by its length and skipped to its end, so a peer that never sends a newline costs at most the bound.
import { StringDecoder } from "node:string_decoder";

export type BoundedLine = { text: string } | { tooLong: number };

/** The lines of `input` (without their "\n"); a last line without one counts too. */
export async function* boundedLines(input: AsyncIterable<Uint8Array | string>, maxBytes: number): AsyncGenerator<BoundedLine> {
  let held: Buffer[] = [];
  let heldBytes = 0;
  // set while a line past the bound is skipped: its length so far
  let skipping: number | undefined;
  const take = (): BoundedLine => {
    const line = Buffer.concat(held);
    held = [];
    heldBytes = 0;
    return { text: new StringDecoder("utf8").end(line) };
  };
  for await (const chunk of input) {
    let bytes = typeof chunk === "string" ? Buffer.from(chunk) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    while (bytes.length > 0) {
      const end = bytes.indexOf(0x0a);
      const piece = end === -1 ? bytes : bytes.subarray(0, end);
      bytes = end === -1 ? Buffer.alloc(0) : bytes.subarray(end + 1);
      if (skipping !== undefined) skipping += piece.length;
      else if (heldBytes + piece.length > maxBytes) {
        skipping = heldBytes + piece.length;
        held = [];
        heldBytes = 0;
      } else {
        // copied: the stream may reuse its chunk's memory
        held.push(Buffer.from(piece));
        heldBytes += piece.length;
      }
      if (end === -1) break;
      if (skipping !== undefined) {
        yield { tooLong: skipping };
        skipping = undefined;
      } else yield take();
    }
  }
  if (skipping !== undefined) yield { tooLong: skipping };
  else if (heldBytes > 0) yield take();
}
