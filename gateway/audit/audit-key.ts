// The auditor's key (issue 43 item 4, AUDIT-DESIGN §5): an Ed25519 key that signs each failure's evidence, so a
// listing or a known-keys file can carry only audits by auditors one trusts. Made in the data dir (`audit-key`, 0600,
// as a coordinator's directory key is); on a store every replica shares (PostgreSQL) the first replica's seed is
// kept there as a shared secret and every replica signs with it. `svc-gateway audit-key` prints its public half.
import { Signer } from "../../src/crypto/signing.ts";
import { seedFile } from "../../src/process/seed-file.ts";
import type { KeyStore } from "../keys/key-store.ts";

export const AUDIT_KEY_FILE = "audit-key";
/** The shared secret's name on a store every replica shares. */
const AUDIT_KEY_SECRET = "audit-key";

/** The auditor's signing key: the store's shared one where there is one, else the data dir's. */
export async function auditKey(dataDir: string, store: Pick<KeyStore, "sharedSecret">): Promise<Signer> {
  const own = seedFile(dataDir, AUDIT_KEY_FILE, "an svc audit key");
  const seed = store.sharedSecret ? await store.sharedSecret(AUDIT_KEY_SECRET, own) : own;
  if (!/^[0-9a-f]{64}$/.test(seed)) throw new Error(`the key store's shared ${AUDIT_KEY_SECRET} is not an svc audit key (64 hex characters)`);
  return Signer.fromSeed(Buffer.from(seed, "hex"));
}
