// A swarm of synthetic agents in one process, for the scale benchmark: each is a real AgentDaemon with its
// own keys and its own WebSocket to the coordinator, attested and advertising like `svc-agent start
// --engine synthetic`; only the process is shared, since 1,000 Node processes would not fit on one machine.
import { Command } from "commander";
import { randomBytes } from "node:crypto";
import { AgentDaemon } from "../agent/daemon/coordinator-link.ts";
import { ModelStore } from "../agent/models/store.ts";
import { SyntheticEngine } from "../agent/engine/synthetic-engine.ts";
import { loadCatalog } from "../src/catalog-file.ts";
import { nonNegativeInteger, positiveInteger } from "../src/process/cli-options.ts";
import { DEFAULT_HEARTBEAT_MS } from "../src/link/heartbeat.ts";
import { providerIdOf } from "../src/receipt/provider-id.ts";
import { sealingKeyPair } from "../src/crypto/seal.ts";
import { Signer } from "../src/crypto/signing.ts";

const opts = new Command("swarm")
  .requiredOption("--coordinator <url>")
  .requiredOption("--agents <n>", "how many agents", positiveInteger)
  .option("--tokens <n>", "tokens per answer", positiveInteger, 16)
  .option("--token-ms <ms>", "pause before each token", nonNegativeInteger, 0)
  .option("--catalog <file>")
  .parse()
  .opts<{ coordinator: string; agents: number; tokens: number; tokenMs: number; catalog?: string }>();

const catalog = loadCatalog(opts.catalog);
const store = new ModelStore({ catalog });
const aliases = catalog.models.map((m) => m.alias);
const daemons: AgentDaemon[] = [];
let advertising = 0;

for (let i = 0; i < opts.agents; i++) {
  const signer = Signer.fromSeed(randomBytes(32));
  const keys = { signer, sealing: await sealingKeyPair(randomBytes(32)), providerId: providerIdOf(signer.publicKey), created: true };
  const daemon = new AgentDaemon({
    coordinatorUrl: opts.coordinator,
    keys,
    engine: new SyntheticEngine({ tokens: opts.tokens, tokenMs: opts.tokenMs, sha256Of: (alias) => store.entry(alias).sha256 }),
    store,
    aliases,
    name: `swarm-${i}`,
    heartbeatMs: DEFAULT_HEARTBEAT_MS,
    log: (line) => {
      // per-session lines would cost more than the sessions; only joining and trouble are worth printing
      if (line.startsWith("advertising")) {
        if (++advertising === opts.agents) console.log(`swarm: all ${advertising} agents advertising`);
      } else if (/error|refused|disconnected/.test(line)) console.log(`swarm-${i}: ${line}`);
    },
  });
  daemons.push(daemon);
  daemon.start();
}

const stop = () => void Promise.all(daemons.map((d) => d.stop())).finally(() => process.exit(0));
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
