// `npm run demo [-- --port N --coordinator-port M --host H --data-dir DIR]`: writes the tiny random-weight demo models
// and their catalog (what `npm start` serves when no catalog chat model is downloaded: one for chat, one for
// embeddings) and prints the two commands that run an operator and a provider as separate processes on this box, the
// way `npm start` does inside, then an example per route (scripts/examples.ts). Nothing is started here.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { serviceOptions } from "./service-options.ts";
import { DEMO_ALIAS, DEMO_EMBEDDING_ALIAS, writeDemoCatalog } from "../tiny-model/demo.ts";
import { binCommand, indent, routeExamples } from "./examples.ts";

const opts = serviceOptions("npm run demo");

const demo = writeDemoCatalog(opts.dataDir);
// a fresh key each time: a fixed one printed in a README would open every demo gateway left running
const key = process.env.SVC_OPERATOR_KEYS?.split(",")[0]?.trim() || `sk-svc_op_${randomBytes(24).toString("base64url")}`;
const gatewayDir = join(opts.dataDir, "demo", "gateway");
const agentDir = join(opts.dataDir, "demo", "agent");
// the coordinator listens on loopback (serve's --coordinator-host), the agent beside it
const coordinator = `http://127.0.0.1:${opts.coordinatorPort}`;
const base = `http://${opts.host.includes(":") ? `[${opts.host}]` : opts.host}:${opts.port}/v1`;
const serve = ["serve", "--host", opts.host, "--port", String(opts.port), "--coordinator-port", String(opts.coordinatorPort)];

console.log(
  [
    `Wrote the demo models ${DEMO_ALIAS} (chat) and ${DEMO_EMBEDDING_ALIAS} (embeddings) and their catalog: random weights, so the`,
    "chat answers are random characters.",
    "",
    "1. The operator (gateway with its embedded coordinator; open enrollment is fine on loopback), with an operator",
    "   key made for this demo just now (set SVC_OPERATOR_KEYS to one of your own to choose it):",
    `   SVC_OPERATOR_KEYS=${key} ${binCommand("svc-gateway", [...serve, "--catalog", demo.catalogPath, "--data-dir", gatewayDir, "--open-enrollment"])}`,
    "",
    "2. The provider, in another terminal:",
    `   ${binCommand("svc-agent", ["start", "--coordinator", coordinator, "--catalog", demo.catalogPath, "--models-dir", demo.modelsDir, "--data-dir", agentDir])}`,
    "",
    "3. Then, from any folder (the key goes in through the environment and stdin, never on a command line, where ps shows it):",
    ...indent(routeExamples(base, key, { chat: DEMO_ALIAS, embedding: DEMO_EMBEDDING_ALIAS }), "   "),
  ].join("\n"),
);
