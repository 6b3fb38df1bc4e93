// Secrets from files, the environment or flags (docs/operator-guide.md, docs/provider-guide.md): a file's first
// line is the secret, a bad file is one line naming the flag, and only a secret typed as a flag is warned about.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command, Option } from "commander";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { readSecretFile, secretFileOption, takeSecret } from "../../../../src/process/secret-option.ts";

const dir = mkdtempSync(join(tmpdir(), "svc-secret-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => {
  vi.restoreAllMocks();
  delete process.env.SVC_TEST_SECRET;
});

const file = (name: string, body: string | Buffer) => {
  const path = join(dir, name);
  writeFileSync(path, body, { mode: 0o600 });
  return path;
};

/** A command with `--secret` (env SVC_TEST_SECRET) and `--secret-file`, parsed from `argv`. */
function parsed(argv: string[]): Command {
  const command = new Command("t")
    .exitOverride()
    .configureOutput({ writeErr: () => undefined })
    .addOption(new Option("--secret <s>").env("SVC_TEST_SECRET"))
    .addOption(secretFileOption("--secret", "the secret"));
  return command.parse(argv, { from: "user" });
}

describe("Links and secrets: a secret from a file, the environment or a flag", () => {
  it("a file's first line, trimmed, is the secret; CRLF and a trailing newline are fine", () => {
    expect(readSecretFile("--secret-file", file("a", "s3cret\n"))).toBe("s3cret");
    expect(readSecretFile("--secret-file", file("b", "  s3cret \r\nsecond line\n"))).toBe("s3cret");
  });

  it("a missing, empty or oversized file is one line naming the flag and the file", () => {
    expect(() => readSecretFile("--secret-file", join(dir, "none"))).toThrow(`--secret-file ${join(dir, "none")}: cannot read it (ENOENT)`);
    expect(() => readSecretFile("--secret-file", file("empty", "\nsecond\n"))).toThrow("the file's first line is empty");
    expect(() => readSecretFile("--secret-file", file("big", Buffer.alloc(70_000, 0x61)))).toThrow("longer than 65536 bytes, so not a secret file");
  });

  it("typed as a flag it works and prints one warning line; from the environment or a file, none", () => {
    const warn = vi.spyOn(console, "error").mockImplementation(() => undefined);
    expect(takeSecret(parsed(["--secret", "typed"]), "--secret", "SVC_TEST_SECRET", "bin")).toBe("typed");
    expect(warn.mock.calls).toEqual([
      ["bin: warning: --secret on the command line can be read by other local users (ps); pass --secret-file FILE or set SVC_TEST_SECRET instead"],
    ]);
    warn.mockClear();
    process.env.SVC_TEST_SECRET = "from-env";
    expect(takeSecret(parsed([]), "--secret", "SVC_TEST_SECRET", "bin")).toBe("from-env");
    delete process.env.SVC_TEST_SECRET;
    expect(takeSecret(parsed(["--secret-file", file("c", "from-file\n")]), "--secret", "SVC_TEST_SECRET", "bin")).toBe("from-file");
    expect(takeSecret(parsed([]), "--secret", "SVC_TEST_SECRET", "bin")).toBeUndefined();
    expect(warn).not.toHaveBeenCalled();
  });

  it("the flag and its file together are a usage error", () => {
    expect(() => parsed(["--secret", "x", "--secret-file", file("d", "y")])).toThrow("option '--secret-file <file>' cannot be used with option '--secret <s>'");
  });
});
