#!/usr/bin/env node
// `svc-agent`: the provider daemon's command line. agent/cli.ts builds the program; this shim checks the Node it
// runs on first (the rest is imported only then, so an unsupported Node gets one line, not a crash), then parses argv.
import { requireSupportedNode } from "../src/process/node-support.ts";

requireSupportedNode("svc-agent");
const [{ agentProgram }, { runProgram }] = await Promise.all([import("../agent/cli.ts"), import("../src/process/cli-options.ts")]);
await runProgram(agentProgram(), "svc-agent");
