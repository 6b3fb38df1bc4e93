// zod shapes for the lowercase hex strings our wire formats carry (keys, digests, signatures, nonces).
import { z } from "zod";

export const hex = (bytes: number) => z.string().regex(new RegExp(`^[0-9a-f]{${bytes * 2}}$`), `expected ${bytes * 2} lowercase hex characters`);
export const Hex16 = hex(16);
export const Hex32 = hex(32);
export const Hex64 = hex(64);
