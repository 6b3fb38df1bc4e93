// `svc-gateway audit-key`: the public half of the key a gateway's auditor signs failed audits' evidence with, for
// `svc-agent verify --audit … --auditor-key KEY` and known-keys files (issue 43 item 4).
import { Command, Option } from "commander";
import { DEFAULT_GATEWAY_DIR, databaseOption } from "./cli-admin.ts";
import { withKeyStore } from "./keys/keys-admin.ts";

interface StoreFlags {
  dataDir: string;
  database?: string;
}

const dataDirOption = () => new Option("--data-dir <dir>", "gateway state, as given to serve").default(DEFAULT_GATEWAY_DIR);

export function addAuditCommands(program: Command): void {
  program
    .command("audit-key")
    .description("print the audit key's public half (made in --data-dir when there is none yet; on --database, the one every replica shares)")
    .addOption(dataDirOption())
    .addOption(databaseOption())
    .action(async (opts: StoreFlags) => {
      const { auditKey } = await import("./audit/audit-key.ts");
      console.log((await withKeyStore(opts, (store) => auditKey(opts.dataDir, store), true)).publicKey);
    });
}

