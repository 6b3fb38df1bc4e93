// zod shapes for the lowercase hex strings our formats carry (keys, digests, signatures, nonces, revisions). Part
// of the portable verifier: `import * as z` lets a browser bundle keep only the zod it uses (85 KB, not 450).
import * as z from "zod";
import { hexPattern } from "./patterns.ts";

/** Exactly `length` lowercase hex characters. */
export const hexChars = (length: number) =>
  z.string().regex(hexPattern(length), `expected ${length} lowercase hex characters`);
/** 16, 32 and 64 bytes as hex: nonces; keys and digests; signatures. */
export const Hex16 = hexChars(32);
export const Hex32 = hexChars(64);
export const Hex64 = hexChars(128);
