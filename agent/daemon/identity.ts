// The provider's identity (DESIGN §4): an Ed25519 signing key and an X25519 sealing key, created on first
// start and kept as two 32-byte seeds in one file under the data dir that only this user can read (0600).
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { Hex32 } from "../../src/receipt/hex.ts";
import { sealingKeyPair, type SealingKeyPair } from "../../src/crypto/seal.ts";
import { Signer } from "../../src/crypto/signing.ts";
import { providerIdOf } from "../../src/receipt/provider-id.ts";
import { makeDirs } from "../../src/process/make-dir.ts";
import { openMode, PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from "../../src/process/file-modes.ts";

const KeyFileSchema = z.strictObject({ version: z.literal(1), signing_seed: Hex32, sealing_seed: Hex32 });

export interface AgentKeys {
  signer: Signer;
  sealing: SealingKeyPair;
  providerId: string;
  /** Whether this start created them. */
  created: boolean;
}

export const keysPath = (dataDir: string) => join(dataDir, "agent-keys.json");

export async function loadOrCreateKeys(dataDir: string): Promise<AgentKeys> {
  makeDirs(dataDir, PRIVATE_DIR_MODE);
  const path = keysPath(dataDir);
  const created = !existsSync(path);
  if (created) {
    const seeds = { version: 1, signing_seed: randomBytes(32).toString("hex"), sealing_seed: randomBytes(32).toString("hex") };
    // "wx": never overwrite keys that another start wrote a moment ago
    writeFileSync(path, `${JSON.stringify(seeds, null, 2)}\n`, { mode: PRIVATE_FILE_MODE, flag: "wx" });
  } else if (openMode(path) !== undefined) {
    chmodSync(path, PRIVATE_FILE_MODE); // a copied or restored file may have come back readable by others
  }
  return { ...(await readKeys(path)), created };
}

/** Reads an existing key file, changing nothing (doctor looks before start would tighten its mode). */
export async function readKeys(path: string): Promise<Omit<AgentKeys, "created">> {
  const parsed = KeyFileSchema.safeParse(JSON.parse(readFileSync(path, "utf8")));
  if (!parsed.success) throw new Error(`${path} is not an svc agent key file; move it away to create new keys`);
  const signer = Signer.fromSeed(Buffer.from(parsed.data.signing_seed, "hex"));
  const sealing = await sealingKeyPair(Buffer.from(parsed.data.sealing_seed, "hex"));
  return { signer, sealing, providerId: providerIdOf(signer.publicKey) };
}
