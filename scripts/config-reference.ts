// `npm run docs:config`: writes docs/configuration.md, every command, flag and environment variable of both
// bins with its default, read from the commander programs themselves (agent/cli.ts, gateway/cli.ts), so the
// reference cannot drift from the code: test/unit/scripts/config-reference.test.ts regenerates it and compares.
// `--check` compares instead of writing, and exits 1 when the file is stale.
import { readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Command, Option } from "commander";
import { agentProgram } from "../agent/cli.ts";
import { gatewayProgram } from "../gateway/cli.ts";

export const REFERENCE_PATH = join(import.meta.dirname, "..", "docs", "configuration.md");

/** Environment variables the code reads itself rather than through a flag's `.env()`: where each applies. */
export const DIRECT_ENV: readonly { name: string; where: string; meaning: string }[] = [
  {
    name: "SVC_OPERATOR_KEYS",
    where: "`svc-gateway serve`, `npm start`",
    meaning:
      "comma-separated operator API keys, valid bearer keys on every route (never shown on the settings page). Without any, only the key store's user keys work (made on the settings page or with `svc-gateway keys create`); `npm start` makes one per run when it is unset",
  },
  { name: "SVC_CHROMIUM", where: "the test suite", meaning: "the Chromium or Chrome the browser tests drive (default `/usr/bin/chromium`)" },
  {
    name: "XDG_CONFIG_HOME",
    where: "`svc-agent service` on Linux",
    meaning: "where the systemd user unit goes: `$XDG_CONFIG_HOME/systemd/user/svc-agent.service` (default `~/.config`)",
  },
];

const INTRO = `# Configuration reference

Every command, flag and environment variable of \`svc-agent\` and \`svc-gateway\`, with its default.

**Generated** by \`npm run docs:config\` (\`scripts/config-reference.ts\`) from the commander definitions in
\`agent/cli.ts\` and \`gateway/cli.ts\` (and the modules they call). Do not edit it by hand:
\`test/unit/scripts/config-reference.test.ts\` fails when this file and the code differ. The guides explain what the flags are
for: [provider guide](provider-guide.md), [operator guide](operator-guide.md), [checking receipts](verifying.md).

Conventions, on every command of both bins:

- \`-h, --help\` prints the command's help; \`-V, --version\` (on the bin itself) prints the package version.
- A usage error (an unknown or bad flag, a missing argument) is one line on stderr naming it and ending \`; see
  --help\`, with exit code 64 (sysexits \`EX_USAGE\`). An error while running is one line too, with exit code 1.
  \`svc-agent verify\`, \`svc-agent doctor\` and \`svc-agent service status\` have their own exit codes (their
  descriptions below say which).
- \`~\` stands for the home directory of the user who runs the command. A flag given on the command line wins
  over its environment variable, and over the variable of a flag it cannot be given with (\`verify --attestation
  FILE\` with \`SVC_API_KEY\` set, \`--token-file\` with \`SVC_PROVIDER_TOKEN\`). Options used only by the tests are hidden
  and not listed.
- \`npm start\` and \`npm run demo\` (not bins) take \`--host\` (\`127.0.0.1\`), \`--port\` (8080), \`--coordinator-port\`
  (8081) and \`--data-dir\` (\`~/.svc\`); see the [README](../README.md#two-commands).
`;

/** Markdown for a table cell: `|` escaped, and `<…>` outside code spans kept from reading as HTML. */
function cell(text: string): string {
  return text
    .split("`")
    .map((part, i) => (i % 2 === 1 ? part : part.replace(/</g, "&lt;").replace(/>/g, "&gt;")))
    .join("`")
    .replace(/\|/g, "\\|");
}

function home(value: string): string {
  const dir = os.homedir();
  return dir.length > 1 && value.startsWith(dir) ? `~${value.slice(dir.length)}` : value;
}

function defaultOf(option: Option): string {
  if (option.defaultValueDescription !== undefined) return option.defaultValueDescription;
  const value: unknown = option.defaultValue;
  if (value === undefined || (Array.isArray(value) && value.length === 0)) return option.mandatory ? "required" : "";
  return `\`${typeof value === "string" ? home(value) : JSON.stringify(value)}\``;
}

function meaningOf(option: Option): string {
  const choices = option.argChoices ? ` (one of ${option.argChoices.map((c) => `\`${c}\``).join(", ")})` : "";
  return cell(`${option.description}${choices}`);
}

const shown = (command: Command) => command.options.filter((o) => !o.hidden && o.long !== "--version" && o.long !== "--help");

function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c; c = c.parent) names.unshift(c.name());
  return names.join(" ");
}

function section(command: Command, out: string[]): void {
  const args = command.registeredArguments.map((a) => (a.required ? `<${a.name()}>` : `[${a.name()}]`)).join(" ");
  out.push(`### \`${commandPath(command)}${args ? ` ${args}` : ""}\``, "", cell(command.description()), "");
  if (command.commands.length > 0) {
    out.push(`Commands: ${command.commands.map((c) => `\`${c.name()}\``).join(", ")}.`, "");
  }
  if (command.registeredArguments.length > 0) {
    out.push("| argument | meaning |", "|---|---|");
    for (const a of command.registeredArguments) out.push(`| \`${a.name()}\`${a.required ? "" : " (optional)"} | ${cell(a.description)} |`);
    out.push("");
  }
  const options = shown(command);
  if (options.length > 0) {
    out.push("| option | default | env | meaning |", "|---|---|---|---|");
    for (const o of options) out.push(`| \`${o.flags}\` | ${defaultOf(o)} | ${o.envVar ? `\`${o.envVar}\`` : ""} | ${meaningOf(o)} |`);
    out.push("");
  }
  for (const sub of command.commands) section(sub, out);
}

function every(command: Command): Command[] {
  return [command, ...command.commands.flatMap(every)];
}

/** docs/configuration.md as the code defines it now. */
export function configReference(): string {
  const programs = [agentProgram(), gatewayProgram()];
  const out = [INTRO];
  for (const program of programs) {
    out.push(`## \`${program.name()}\``, "", cell(program.description()), "");
    for (const command of program.commands) section(command, out);
  }
  out.push("## Environment variables", "", "| variable | applies to | meaning |", "|---|---|---|");
  const byVar = new Map<string, { flags: Set<string>; commands: string[]; meaning: string }>();
  for (const command of programs.flatMap(every)) {
    for (const o of shown(command).filter((o) => o.envVar)) {
      const entry = byVar.get(o.envVar!) ?? { flags: new Set(), commands: [], meaning: o.description };
      entry.flags.add(o.long!);
      entry.commands.push(`\`${commandPath(command)}\``);
      byVar.set(o.envVar!, entry);
    }
  }
  for (const [name, e] of [...byVar].sort(([a], [b]) => a.localeCompare(b))) {
    const flags = [...e.flags].map((f) => `\`${f}\``).join(", ");
    out.push(`| \`${name}\` | ${e.commands.join(", ")} | the same as ${flags}: ${cell(e.meaning)} |`);
  }
  for (const v of DIRECT_ENV) out.push(`| \`${v.name}\` | ${v.where} | ${cell(v.meaning)} |`);
  return `${out.join("\n")}\n`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const text = configReference();
  if (process.argv.includes("--check")) {
    const stale = readFileSync(REFERENCE_PATH, "utf8") !== text;
    console.log(stale ? "docs/configuration.md is stale: run npm run docs:config" : "docs/configuration.md is up to date");
    process.exitCode = stale ? 1 : 0;
  } else {
    writeFileSync(REFERENCE_PATH, text);
    console.log(`wrote ${REFERENCE_PATH}`);
  }
}
