#!/usr/bin/env node
// `svc-agent`: the provider daemon's command line. agent/cli.ts builds the program; this shim parses argv.
import { agentProgram } from "../agent/cli.ts";
import { runProgram } from "../src/process/cli-options.ts";

await runProgram(agentProgram(), "svc-agent");
