// What a saved file must be before the verifier reads it (RFC 8259 §8.1, RFC 7493 §2.1): UTF-8, without a byte order
// mark, with no lone surrogate, and within a size the reader's one pass bounds. Readers disagree on each of these
// (replace, refuse, or keep), so a file that breaks one is refused whole. Portable: part of the verifier in src/receipt/index.ts.
import { findLoneSurrogate } from "./strict-json.ts";

/** The largest saved file read, in bytes (or, for text handed over as a string, UTF-16 code units). */
export const MAX_SAVED_BYTES = 256 * 1024 * 1024;
/** Why a larger file is not read. */
export const TOO_LARGE = `the file is larger than the ${MAX_SAVED_BYTES} bytes the verifier reads`;

/** A saved file's bytes as text; throws when they are not UTF-8 (a byte order mark is kept, for savedTextProblem to refuse). */
export function decodeSavedBytes(bytes: Uint8Array): string {
  if (bytes.length > MAX_SAVED_BYTES) throw new Error(TOO_LARGE);
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new Error("the file is not UTF-8 (RFC 8259 §8.1): readers would replace or refuse its invalid bytes");
  }
}

/** What makes saved text unreadable as a whole, or undefined. */
export function savedTextProblem(text: string): string | undefined {
  if (text.length > MAX_SAVED_BYTES) return TOO_LARGE;
  if (text.charCodeAt(0) === 0xfeff) return "the file starts with a byte order mark (U+FEFF), which RFC 8259 §8.1 forbids: some readers skip it, others refuse the file";
  const lone = findLoneSurrogate(text);
  if (lone !== undefined) return `the file holds a lone surrogate (${lone.unit}), which no UTF-8 file can`;
  return undefined;
}

/** Drops JSON's own whitespace at both ends (space, tab, LF, CR), never other Unicode spaces, which JSON does not skip. */
export function trimJsonSpace(text: string): string {
  const space = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
  let start = 0;
  let end = text.length;
  while (start < end && space(text.charCodeAt(start))) start++;
  while (end > start && space(text.charCodeAt(end - 1))) end--;
  return text.slice(start, end);
}
