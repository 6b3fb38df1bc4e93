// Fresh random ids for the OpenAI objects (chatcmpl-…, resp_…, msg_…): from the runtime's WebCrypto, which Node,
// Deno, Bun and browsers all have, so the shared OpenAI layer needs no node: module.

/** `n` random bytes. */
export function randomBytesOf(n: number): Uint8Array {
  return globalThis.crypto.getRandomValues(new Uint8Array(n));
}

/** `n` random bytes as lowercase hex. */
export const randomHex = (n: number): string => Array.from(randomBytesOf(n), (b) => b.toString(16).padStart(2, "0")).join("");

const BASE64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/** `n` random bytes as unpadded base64url, as node's `toString("base64url")` writes them. */
export function randomBase64url(n: number): string {
  const bytes = randomBytesOf(n);
  let out = "";
  for (let i = 0; i < bytes.length; i += 3) {
    const chunk = (bytes[i]! << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    const chars = Math.min(4, Math.ceil(((bytes.length - i) * 8) / 6));
    for (let j = 0; j < chars; j++) out += BASE64URL[(chunk >> (18 - 6 * j)) & 63];
  }
  return out;
}
