// The secret a gateway presents to its coordinator. The link is always authenticated, loopback included, so a
// coordinator given no --gateway-secret makes one in its data dir (0600), where a gateway sharing that dir reads it.
import { randomBytes } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readSecretFile } from "../../src/process/secret-option.ts";
import { PRIVATE_FILE_MODE } from "./private-files.ts";

export const GATEWAY_SECRET_FILE = "gateway-secret";

/** The data dir's gateway secret, made (32 random bytes, base64url, 0600) when there is none yet. */
export function dataDirGatewaySecret(dataDir: string): { secret: string; path: string } {
  const path = join(dataDir, GATEWAY_SECRET_FILE);
  try {
    writeFileSync(path, `${randomBytes(32).toString("base64url")}\n`, { mode: PRIVATE_FILE_MODE, flag: "wx" });
  } catch (err) {
    // another process sharing the dir made it first: theirs is the one
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
  return { secret: readSecretFile(path, path), path };
}

/** The data dir's gateway secret when there is one (a coordinator sharing the dir made it), else undefined. */
export function existingGatewaySecret(dataDir: string): string | undefined {
  const path = join(dataDir, GATEWAY_SECRET_FILE);
  return existsSync(path) ? readSecretFile(path, path) : undefined;
}
