#!/usr/bin/env node
// `svc-gateway`: the gateway's command line. gateway/cli.ts builds the program; this shim parses argv.
import { gatewayProgram } from "../gateway/cli.ts";
import { runProgram } from "../src/process/cli-options.ts";

await runProgram(gatewayProgram(), "svc-gateway");
