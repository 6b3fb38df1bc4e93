// The regular expressions of our formats' strings, apart from their zod shapes (hex.ts, receipt.ts), so that the
// command lines check a flag's value without loading zod.

/** Exactly `length` lowercase hex characters. */
export const hexPattern = (length: number) => new RegExp(`^[0-9a-f]{${length}}$`);

/** `x-svc-receipt-nonce`: 16–64 base64url characters chosen by the caller. */
export const CLIENT_NONCE_PATTERN = /^[A-Za-z0-9_-]{16,64}$/;
