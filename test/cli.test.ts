// Both command lines behave like tools people already use: `--version`, and a usage error as one line that
// names the flag and points at --help, with exit code 64 (EX_USAGE), never the whole help text.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { runCli } from "./fixtures/cli.ts";

const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };

describe("Command lines", () => {
  it.each(["svc-agent", "svc-gateway"] as const)("%s --version prints the package version", async (bin) => {
    const result = await runCli(bin, ["--version"]);
    expect([result.code, result.stdout, result.stderr]).toEqual([0, `${version}\n`, ""]);
  });

  it.each([
    ["svc-gateway", ["serve", "--nope"], "svc-gateway: unknown option '--nope'; see --help\n"],
    ["svc-gateway", ["providers", "revoke"], "svc-gateway: missing required argument 'id'; see --help\n"],
    ["svc-agent", ["catalog", "--nope"], "svc-agent: unknown option '--nope'; see --help\n"],
  ] as const)("%s %j is one line, exit 64", async (bin, args, line) => {
    const result = await runCli(bin, [...args]);
    expect([result.code, result.stderr, result.stdout]).toEqual([64, line, ""]);
  });

  it("serve --help names every environment variable it reads", async () => {
    const { stdout } = await runCli("svc-gateway", ["serve", "--help"]);
    for (const name of ["SVC_OPERATOR_KEYS", "SVC_OIDC_ISSUER", "SVC_OIDC_CLIENT_ID", "SVC_OIDC_CLIENT_SECRET", "SVC_PUBLIC_URL", "SVC_GATEWAY_SECRET"]) {
      expect(stdout).toContain(name);
    }
  });
});
