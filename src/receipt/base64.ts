// Base64 (RFC 4648, with padding) in plain JavaScript (no Buffer), for the portable verifier: one byte form per
// value, so a non-canonical encoding (odd padding bits, stray characters) never reads as the canonical one.

export function bytesToBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

/** The bytes of a canonical base64 text, or undefined when it is not one. */
export function base64ToBytes(text: string): Uint8Array | undefined {
  let binary: string;
  try {
    binary = atob(text);
  } catch {
    return undefined;
  }
  const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  return bytesToBase64(bytes) === text ? bytes : undefined;
}
