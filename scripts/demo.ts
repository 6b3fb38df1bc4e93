// `npm run demo [-- --data-dir DIR]`: writes the tiny random-weight demo model and its catalog (what `npm start`
// serves when no catalog model is downloaded) and prints the two commands that run an operator and a provider as
// separate processes on this box, the way `npm start` does inside. Nothing is started here.
import { Command } from "commander";
import { join } from "node:path";
import { DEFAULT_DATA_DIR } from "../src/process/data-dir.ts";
import { DEMO_ALIAS, writeDemoCatalog } from "../tiny-model/demo.ts";

const opts = new Command("npm run demo")
  .option("--data-dir <dir>", "where the demo catalog and model go (under demo/)", DEFAULT_DATA_DIR)
  .parse()
  .opts<{ dataDir: string }>();

const demo = writeDemoCatalog(opts.dataDir);
const gatewayDir = join(opts.dataDir, "demo", "gateway");
const agentDir = join(opts.dataDir, "demo", "agent");
console.log(`Wrote the demo model ${DEMO_ALIAS} (random weights: the answers are random characters) and its catalog.

1. The operator (gateway with its embedded coordinator; open enrollment is fine on loopback):
   SVC_OPERATOR_KEYS=sk-svc_op_demo-key-0123456789 npx svc-gateway serve --catalog ${demo.catalogPath} --data-dir ${gatewayDir} --open-enrollment

2. The provider, in another terminal:
   npx svc-agent start --coordinator http://127.0.0.1:8081 --catalog ${demo.catalogPath} --models-dir ${demo.modelsDir} --data-dir ${agentDir}

3. Then:
   curl -s http://127.0.0.1:8080/v1/chat/completions -H 'authorization: Bearer sk-svc_op_demo-key-0123456789' \\
     -H 'content-type: application/json' -d '{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 16}'`);
