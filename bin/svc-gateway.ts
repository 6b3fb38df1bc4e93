#!/usr/bin/env node
// `svc-gateway`: the gateway's command line. gateway/cli.ts builds the program; this shim checks the Node it runs on
// first (the rest is imported only then, so an unsupported Node gets one line, not a crash), then parses argv.
import { requireSupportedNode } from "../src/process/node-support.ts";

requireSupportedNode("svc-gateway");
const [{ gatewayProgram }, { runProgram }] = await Promise.all([import("../gateway/cli.ts"), import("../src/process/cli-options.ts")]);
await runProgram(gatewayProgram(), "svc-gateway");
