// docs/configuration.md's conventions for both bins: a flag given on the command line wins over its environment
// variable, also over the variable of a flag it cannot be given with (issue 44: `verify --attestation FILE` was
// refused while SVC_API_KEY was set, as npm start's banner leaves it). Every such pair of both programs is found and
// parsed here, with each command's action replaced by one that only keeps what it was given.
import { Command, type Option } from "commander";
import { afterEach, describe, expect, it } from "vitest";
import { agentProgram } from "../../../../agent/cli.ts";
import { gatewayProgram } from "../../../../gateway/cli.ts";
import { flagsWinOverEnvironment } from "../../../../src/process/cli-options.ts";

interface Pair {
  /** The subcommand's path, e.g. ["verify"]. */
  path: string[];
  /** The flag typed on the command line. */
  typed: Option;
  /** The option whose environment variable is set. */
  fromEnv: Option;
}

const conflictsOf = (option: Option): string[] => (option as Option & { conflictsWith: string[] }).conflictsWith;

/** Every pair of conflicting options of which one has an environment variable, in both directions. */
function envConflicts(program: Command): Pair[] {
  const pairs: Pair[] = [];
  const walk = (command: Command, path: string[]) => {
    for (const a of command.options) {
      for (const b of command.options) {
        if (a === b || b.envVar === undefined) continue;
        if (conflictsOf(a).includes(b.attributeName()) || conflictsOf(b).includes(a.attributeName())) pairs.push({ path, typed: a, fromEnv: b });
      }
    }
    for (const sub of command.commands) walk(sub, [...path, sub.name()]);
  };
  walk(program, []);
  return pairs;
}

/** Parses `argv` as the bin would (with the rule applied), every action replaced by one that keeps its command. */
async function parse(program: Command, argv: string[]): Promise<Command> {
  let ran: Command | undefined;
  const quiet = (command: Command) => {
    command.configureOutput({ writeErr: () => undefined, outputError: () => undefined }).action((...args: unknown[]) => {
      ran = args.at(-1) as Command;
    });
    command.commands.forEach(quiet);
  };
  quiet(program);
  flagsWinOverEnvironment(program);
  await program.parseAsync(argv, { from: "user" });
  expect(ran, argv.join(" ")).toBeDefined();
  return ran!;
}

const set: string[] = [];
afterEach(() => {
  for (const name of set.splice(0)) delete process.env[name];
});

/** The required options a command needs to parse at all (start's --coordinator, coordinator's --port), with a value each parses. */
const required = (program: Command, path: string[]): string[] => {
  const command = path.reduce((c, name) => c.commands.find((s) => s.name() === name)!, program);
  return command.options.filter((o) => o.mandatory).flatMap((o) => [o.long!, "1"]);
};

describe("docs/configuration.md: a flag given on the command line wins over its environment variable", () => {
  const programs = { "svc-agent": agentProgram, "svc-gateway": gatewayProgram };

  it("finds the conflicts that involve an environment variable (a secret and its -file twin, verify --attestation)", () => {
    const found = Object.entries(programs).flatMap(([bin, make]) => envConflicts(make()).map((p) => `${bin} ${p.path.join(" ")} ${p.typed.long} / ${p.fromEnv.envVar}`));
    expect(found).toEqual(
      expect.arrayContaining([
        "svc-agent verify --attestation / SVC_API_KEY",
        "svc-agent verify --api-key-file / SVC_API_KEY",
        "svc-agent start --token-file / SVC_PROVIDER_TOKEN",
        "svc-agent doctor --token-file / SVC_PROVIDER_TOKEN",
        "svc-agent service install --token-file / SVC_PROVIDER_TOKEN",
        "svc-gateway serve --gateway-secret-file / SVC_GATEWAY_SECRET",
        "svc-gateway serve --oidc-client-secret-file / SVC_OIDC_CLIENT_SECRET",
        "svc-gateway coordinator --gateway-secret-file / SVC_GATEWAY_SECRET",
      ]),
    );
  });

  for (const [bin, make] of Object.entries(programs)) {
    for (const { path, typed, fromEnv } of envConflicts(make())) {
      it(`${bin} ${path.join(" ")} ${typed.long} with ${fromEnv.envVar} set: the flag is taken, the variable set aside`, async () => {
        process.env[fromEnv.envVar!] = "from-the-environment";
        set.push(fromEnv.envVar!);
        const program = make();
        const command = await parse(program, [...path, ...(typed.required || typed.optional ? [typed.long!, "typed-value"] : [typed.long!]), ...required(program, path)]);
        expect(command.getOptionValueSource(typed.attributeName())).toBe("cli");
        expect(command.getOptionValue(fromEnv.attributeName())).toBe(fromEnv.defaultValue);
      });
    }
  }

  it("without the conflicting flag, the variable is still read", async () => {
    process.env.SVC_API_KEY = "sk-from-env";
    set.push("SVC_API_KEY");
    const command = await parse(agentProgram(), ["verify", "answer.json"]);
    expect([command.getOptionValue("apiKey"), command.getOptionValueSource("apiKey")]).toEqual(["sk-from-env", "env"]);
  });

  it("two conflicting flags both typed are still a usage error", async () => {
    await expect(parse(agentProgram(), ["verify", "--attestation", "a.json", "--api-key", "k"])).rejects.toMatchObject({ code: "commander.conflictingOption" });
  });
});
