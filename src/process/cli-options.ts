// What the two command lines share: argument parsers, one-line usage errors and their exit code, --version, and
// running a program.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { CommanderError, InvalidArgumentError, type Command, type Option, type OptionValues, type OutputConfiguration } from "commander";
import { PACKAGE_ROOT } from "./package-root.ts";
import { CLIENT_NONCE_PATTERN, hexPattern } from "../receipt/patterns.ts";

export const positiveNumber = (value: string): number => {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError("expected a positive number");
  return n;
};

export const nonNegativeNumber = (value: string): number => {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new InvalidArgumentError("expected a number, 0 or more");
  return n;
};

export const positiveInteger = (value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError("expected a positive integer");
  return n;
};

export const nonNegativeInteger = (value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError("expected a whole number, 0 or more");
  return n;
};

export const port = (value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError("expected a port number (0-65535)");
  return n;
};

/** For repeatable options such as `--model A=P --model B=Q`. */
export const collect = (value: string, previous: string[]): string[] => [...previous, value];

/** A repeatable `--model ALIAS=PATH` whose file must exist now: a typo fails at start, not at the first request. */
export const existingModelFile = (value: string, previous: string[]): string[] => {
  const eq = value.indexOf("=");
  if (eq <= 0 || eq === value.length - 1) throw new InvalidArgumentError("expected ALIAS=PATH");
  const path = value.slice(eq + 1);
  if (!existsSync(path)) throw new InvalidArgumentError(`no file at ${path}`);
  return [...previous, value];
};

const HEX_KEY = hexPattern(64);

/** A raw Ed25519 public key. */
export const hexKey = (value: string): string => {
  if (!HEX_KEY.test(value)) throw new InvalidArgumentError("expected 64 lowercase hex characters");
  return value;
};

/** An `x-svc-receipt-nonce` value. */
export const receiptNonce = (value: string): string => {
  if (!CLIENT_NONCE_PATTERN.test(value)) throw new InvalidArgumentError("expected 16 to 64 base64url characters");
  return value;
};

/** An http(s) URL. */
export const httpUrl = (value: string): string => {
  if (!URL.canParse(value) || !/^https?:$/.test(new URL(value).protocol)) throw new InvalidArgumentError("expected an http:// or https:// URL");
  return value;
};

/** sysexits.h EX_USAGE: a command line commander refused, never confused with a command's own exit codes. */
export const USAGE_EXIT = 64;

/** Commander's usage errors as one line, `bin: unknown option '--x' (Did you mean --y?); see --help`, without the help text. */
export const oneLineUsageErrors = (bin: string): OutputConfiguration => ({
  outputError: (text, write) => write(`${bin}: ${text.replace(/^error: /, "").replace(/\s*\n\s*/g, " ").trim()}; see --help\n`),
});

/**
 * The options of a script run by npm (`npm start`, `npm run demo`): `--help` prints and exits 0, and a usage error is
 * one line, `name: unknown option '--x'; see --help`, with exit USAGE_EXIT, as the bins do.
 */
export function parseScriptOptions<T>(program: Command, name: string, argv: readonly string[] = process.argv): T {
  try {
    return program.exitOverride().configureOutput(oneLineUsageErrors(name)).parse(argv).opts<T & OptionValues>();
  } catch (err) {
    if (!(err instanceof CommanderError)) throw err;
    process.exit(err.exitCode === 0 ? 0 : USAGE_EXIT);
  }
}

/** This package's version, for `--version` on both bins. */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(join(PACKAGE_ROOT, "package.json"), "utf8")) as { version: string }).version;
}

/** A per-key rate-limit override: a positive integer, or `default` (null) to follow the operator's default again. */
/**
 * A rate-limit override: N, or `default` (the serve flag's value applies again). `default` stays a word here, since
 * commander stores an empty string for a parser's null; the command turns it into the store's null.
 */
export const limitOverride = (value: string): number | "default" => {
  if (value === "default") return "default";
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError("expected a positive integer or `default`");
  return n;
};

/**
 * Commander reports a missing required option before an unknown one, so `start --bogus` would say `--coordinator`
 * is missing; a mistyped flag is the likelier mistake, so the required options are checked after the unknown ones,
 * just before the action runs, in commander's own words. Done at run time: the options stay marked required for
 * --help and docs/configuration.md.
 */
function unknownOptionsFirst(program: Command): void {
  const required = new Map<Command, Option[]>();
  const walk = (command: Command) => {
    const mandatory = command.options.filter((o) => o.mandatory);
    for (const option of mandatory) option.mandatory = false;
    if (mandatory.length > 0) required.set(command, mandatory);
    command.commands.forEach(walk);
  };
  walk(program);
  program.hook("preAction", (_program, action) => {
    for (let command: Command | null = action; command !== null; command = command.parent) {
      const missing = required.get(command)?.find((o) => command!.getOptionValue(o.attributeName()) === undefined);
      if (missing) action.error(`error: required option '${missing.flags}' not specified`, { exitCode: USAGE_EXIT, code: "commander.missingMandatoryOptionValue" });
    }
  });
}

/** The attributes an option was declared to conflict with (commander keeps them; its typings do not show them). */
const conflictsOf = (option: Option): readonly string[] => (option as Option & { conflictsWith?: string[] }).conflictsWith ?? [];

/**
 * A flag given on the command line wins over its environment variable (docs/configuration.md), also over the
 * variable of a flag it conflicts with: commander counts a value from the environment as given, so `verify
 * --attestation FILE` with SVC_API_KEY set (as npm start's banner leaves it) was refused as a conflict. A value the
 * environment supplied is dropped when a flag it conflicts with is on the command line, before commander checks
 * conflicts; two flags that conflict, both typed, are still refused.
 */
export function flagsWinOverEnvironment(program: Command): void {
  const walk = (command: Command) => {
    for (const option of command.options) {
      if (option.envVar === undefined) continue;
      const name = option.attributeName();
      const rivals = command.options.filter((o) => conflictsOf(o).includes(name) || conflictsOf(option).includes(o.attributeName()));
      if (rivals.length === 0) continue;
      // commander's own listener, added with the option, has set the value from the environment by now
      command.on(`optionEnv:${option.name()}`, () => {
        if (rivals.some((o) => command.getOptionValueSource(o.attributeName()) === "cli")) command.setOptionValueWithSource(name, option.defaultValue, "default");
      });
    }
    command.commands.forEach(walk);
  };
  walk(program);
}

/**
 * Parses argv and runs the command a bin's program names: a usage error exits USAGE_EXIT, any other failure is one
 * line and exit 1, or the error's own `exitCode` (2: a --database that is wrong or away).
 */
export async function runProgram(program: Command, bin: string): Promise<void> {
  unknownOptionsFirst(program);
  flagsWinOverEnvironment(program);
  try {
    await program.parseAsync();
  } catch (err) {
    if (err instanceof CommanderError) {
      // commander has printed the error (or the help or version asked for) already
      process.exitCode = err.exitCode === 0 ? 0 : USAGE_EXIT;
    } else {
      console.error(`${bin}: ${(err as Error).message}`);
      process.exitCode = (err as { exitCode?: number }).exitCode ?? 1;
      // a command that failed half-started (a database pool, a NATS connection open) must still end; unref'd, so a
      // process with nothing left open exits at once, as before
      setTimeout(() => process.exit(), 1_000).unref();
    }
  }
}
