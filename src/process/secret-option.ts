// A secret typed on the command line is in every local user's `ps`. So each secret flag has a `-file` twin and an
// environment variable, and a secret given as the flag itself still works but earns a one-line warning.
import { closeSync, openSync, readSync } from "node:fs";
import { Command, Option } from "commander";

/** A secret file holds one line; anything this long is not one, and is not read whole. */
const SECRET_FILE_MAX_BYTES = 64 * 1024;

/** The attribute commander keeps a flag's value under (`--gateway-secret` → `gatewaySecret`). */
const attributeOf = (flag: string): string => new Option(flag).attributeName();

/** `FLAG-file <file>`: the secret from a file instead; given with FLAG (or its env var) it is a usage error. */
export function secretFileOption(flag: string, what: string): Option {
  return new Option(`${flag}-file <file>`, `read ${what} from this file (its first line), so that ps does not show it`).conflicts(attributeOf(flag));
}

/** The secret's first line from `file`, named by `fileFlag` in any error. */
export function readSecretFile(fileFlag: string, file: string): string {
  const buffer = Buffer.alloc(SECRET_FILE_MAX_BYTES + 1);
  let length: number;
  try {
    const fd = openSync(file, "r");
    try {
      length = readSync(fd, buffer, 0, buffer.length, 0);
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    throw new Error(`${fileFlag} ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  if (length > SECRET_FILE_MAX_BYTES) throw new Error(`${fileFlag} ${file}: longer than ${SECRET_FILE_MAX_BYTES} bytes, so not a secret file`);
  const secret = (buffer.subarray(0, length).toString("utf8").split(/\r?\n/, 1)[0] ?? "").trim();
  if (secret === "") throw new Error(`${fileFlag} ${file}: the file's first line is empty`);
  return secret;
}

/**
 * The secret in effect: from `FLAG-file`, else the flag or its env var. A value typed as the flag gets a one-line
 * warning on stderr, from `bin`; one from the environment or a file does not.
 */
export function takeSecret(command: Command, flag: string, env: string, bin: string): string | undefined {
  const file = command.getOptionValue(attributeOf(`${flag}-file`)) as string | undefined;
  if (file !== undefined) return readSecretFile(`${flag}-file`, file);
  const name = attributeOf(flag);
  const value = command.getOptionValue(name) as string | undefined;
  if (value !== undefined && command.getOptionValueSource(name) === "cli") {
    console.error(`${bin}: warning: ${flag} on the command line can be read by other local users (ps); pass ${flag}-file FILE or set ${env} instead`);
  }
  return value;
}
