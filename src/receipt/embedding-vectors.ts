// The canonical form of an embeddings answer (RECEIPTS.md): what the agent sends, the receipt's response_sha256
// covers and the gateway returns, as float or base64. Plain JavaScript (no Buffer), like the rest of the verifier.
import { base64ToBytes, bytesToBase64 } from "./base64.ts";
import { canonicalJson } from "./canonical-json.ts";

/**
 * One vector's canonical form: its float32 values, little-endian, in base64 (RFC 4648, with padding), which is
 * also exactly OpenAI's `encoding_format: "base64"`. A float answer's numbers are these float32 values, so
 * either form maps to the same bytes.
 */
export function vectorBase64(vector: ArrayLike<number>): string {
  const bytes = new Uint8Array(vector.length * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < vector.length; i++) view.setFloat32(i * 4, vector[i]!, true);
  return bytesToBase64(bytes);
}

/** A canonical base64 vector back to its numbers; undefined when it is not `dimensions` float32 values. */
export function vectorFromBase64(text: string, dimensions: number): number[] | undefined {
  if (text.length !== base64Length(dimensions)) return undefined;
  // one byte form per vector: a non-canonical encoding (odd padding bits) must not pass as this one
  const bytes = base64ToBytes(text);
  if (bytes === undefined) return undefined;
  const view = new DataView(bytes.buffer);
  const vector = Array.from({ length: dimensions }, (_, i) => view.getFloat32(i * 4, true));
  // and one vector per byte form: a NaN's payload bits are not kept by a number
  return vectorBase64(vector) === text ? vector : undefined;
}

/** The content the receipt's response_sha256 covers: the RFC 8785 JSON array of the vectors' base64, in input order. */
export const embeddingsContent = (vectors: readonly string[]): string => canonicalJson(vectors);

/** That content in pieces of one vector each, as the agent sends them; joined, they are exactly embeddingsContent. */
export function embeddingsPieces(vectors: readonly string[]): string[] {
  if (vectors.length === 0) return ["[]"];
  return vectors.map((v, i) => `${i === 0 ? "[" : ","}"${v}"${i === vectors.length - 1 ? "]" : ""}`);
}

export const base64Length = (dimensions: number): number => 4 * Math.ceil((dimensions * 4) / 3);

/** The exact length of the content for `count` vectors of `dimensions` values. */
export const embeddingsContentLength = (count: number, dimensions: number): number => 2 + count * (base64Length(dimensions) + 2) + Math.max(0, count - 1);

/** The vectors in `content`, when it is the canonical form of `count` vectors of `dimensions` values; else undefined. */
export function readEmbeddingsContent(content: string, count: number, dimensions: number): number[][] | undefined {
  if (content.length !== embeddingsContentLength(count, dimensions)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(content);
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || parsed.length !== count || embeddingsContent(parsed as string[]) !== content) return undefined;
  const vectors: number[][] = [];
  for (const item of parsed) {
    const vector = typeof item === "string" ? vectorFromBase64(item, dimensions) : undefined;
    if (vector === undefined) return undefined;
    vectors.push(vector);
  }
  return vectors;
}
