// Owner-only file modes, shared by the gateway's key store and the agent's keys: what counts as private, and
// how a mode reads in a message.
import { statSync } from "node:fs";

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** The permission bits, when group or others have any of them; undefined when only the owner has access. */
export function openMode(path: string): number | undefined {
  const mode = statSync(path).mode & 0o777;
  return (mode & 0o077) === 0 ? undefined : mode;
}

export const octal = (mode: number) => `0${mode.toString(8).padStart(3, "0")}`;
