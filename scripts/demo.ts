// `npm run demo [-- --data-dir DIR]`: writes the tiny random-weight demo model and its catalog (what `npm start`
// serves when no catalog model is downloaded) and prints the two commands that run an operator and a provider as
// separate processes on this box, the way `npm start` does inside. Nothing is started here.
import { Command } from "commander";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { DEFAULT_DATA_DIR } from "../src/process/data-dir.ts";
import { DEMO_ALIAS, writeDemoCatalog } from "../tiny-model/demo.ts";

const opts = new Command("npm run demo")
  .option("--data-dir <dir>", "where the demo catalog and model go (under demo/)", DEFAULT_DATA_DIR)
  .parse()
  .opts<{ dataDir: string }>();

const demo = writeDemoCatalog(opts.dataDir);
// a fresh key each time: a fixed one printed in a README would open every demo gateway left running
const key = process.env.SVC_OPERATOR_KEYS?.split(",")[0]?.trim() || `sk-svc_op_${randomBytes(24).toString("base64url")}`;
const gatewayDir = join(opts.dataDir, "demo", "gateway");
const agentDir = join(opts.dataDir, "demo", "agent");
console.log(`Wrote the demo model ${DEMO_ALIAS} (random weights: the answers are random characters) and its catalog.

1. The operator (gateway with its embedded coordinator; open enrollment is fine on loopback), with an operator
   key made for this demo just now (set SVC_OPERATOR_KEYS to one of your own to choose it):
   SVC_OPERATOR_KEYS=${key} npx svc-gateway serve --catalog ${demo.catalogPath} --data-dir ${gatewayDir} --open-enrollment

2. The provider, in another terminal:
   npx svc-agent start --coordinator http://127.0.0.1:8081 --catalog ${demo.catalogPath} --models-dir ${demo.modelsDir} --data-dir ${agentDir}

3. Then (the key goes in through the environment and stdin, never on a command line, where ps shows it):
   export SVC_API_KEY=${key}
   printf 'Authorization: Bearer %s\\n' "$SVC_API_KEY" | curl -s http://127.0.0.1:8080/v1/chat/completions -H @- \\
     -H 'content-type: application/json' -d '{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 16}'`);
