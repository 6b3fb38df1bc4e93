// A coordinator's directory key (DESIGN §11): an Ed25519 key made in its data dir the first time it runs on NATS
// (0600, like an agent's identity), with which it signs every message it publishes there. Gateways on NATS list its
// public half in --coordinator-keys (`svc-gateway directory-key` prints it), and take no coordinator message without it.
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Signer } from "../../src/crypto/signing.ts";
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from "../../src/process/file-modes.ts";
import { makeDirs } from "../../src/process/make-dir.ts";

export const DIRECTORY_KEY_FILE = "directory-key";

/** The data dir's directory key, made (a 32-byte seed in hex, 0600) when there is none yet. */
export function directoryKey(dataDir: string): Signer {
  makeDirs(dataDir, PRIVATE_DIR_MODE);
  const path = join(dataDir, DIRECTORY_KEY_FILE);
  try {
    writeFileSync(path, `${randomBytes(32).toString("hex")}\n`, { mode: PRIVATE_FILE_MODE, flag: "wx" });
  } catch (err) {
    // another process sharing the dir made it first: theirs is the one
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
  const seed = readFileSync(path, "utf8").trim();
  if (!/^[0-9a-f]{64}$/.test(seed)) throw new Error(`${path} is not an svc directory key (64 hex characters); move it away to make a new one`);
  return Signer.fromSeed(Buffer.from(seed, "hex"));
}
