// `svc-gateway audit-key`: the public half of the key a gateway's auditor signs failed audits' evidence with, for
// `svc-agent verify --audit … --auditor-key KEY` and known-keys files; and `svc-gateway audit clear ID`, which lifts a
// failed audit's bar (issue 43 item 4).
import { Command, Option } from "commander";
import { DEFAULT_GATEWAY_DIR, databaseOption, keysAdmin } from "./cli-admin.ts";

interface StoreFlags {
  dataDir: string;
  database?: string;
}

const dataDirOption = () => new Option("--data-dir <dir>", "gateway state, as given to serve").default(DEFAULT_GATEWAY_DIR);

/** `svc-gateway audit-key` and `svc-gateway audit clear ID`. */
export function addAuditCommands(program: Command): void {
  program
    .command("audit-key")
    .description("print the audit key's public half (made in --data-dir when there is none yet; on --database, the one every replica shares)")
    .addOption(dataDirOption())
    .addOption(databaseOption())
    .action(async (opts: StoreFlags) => {
      const [{ auditKey }, { withKeyStore }] = await Promise.all([import("./audit/audit-key.ts"), keysAdmin()]);
      console.log((await withKeyStore(opts, (store) => auditKey(opts.dataDir, store), true)).publicKey);
    });

  // an operator lifts a failed audit's bar; every gateway on the store reads it within its poll
  const audit = program.command("audit").description("audits of providers' weights: lift a failed audit's bar");
  audit
    .command("clear")
    .description("lift the bar a failed audit put on its provider (its enrollment and device): every gateway on this store puts it back in rotation within 2 s; the record and the evidence stay")
    .argument("<id>", "the failed audit's id (aud_…), from GET /v1/providers/{id}/attestation or the gateway's log")
    .option("--json", "print {id, provider, cleared_at} as JSON")
    .addOption(dataDirOption())
    .addOption(databaseOption())
    .action(async (id: string, opts: StoreFlags & { json?: boolean }) => {
      const { AUDIT_ID } = await import("./keys/audit-store.ts");
      if (!AUDIT_ID.test(id)) throw new Error(`audit clear ${id}: not an audit id (aud_ and 24 hex digits)`);
      const cleared = await (await keysAdmin()).withKeyStore(opts, (store) => store.audits().clear(id));
      if (cleared === undefined) throw new Error(`audit clear ${id}: no failed audit has that id on this store`);
      const at = new Date(cleared.clearedAt!).toISOString();
      console.log(opts.json ? JSON.stringify({ id, provider: cleared.provider, cleared_at: at }) : `svc-gateway: cleared ${id} (provider ${cleared.provider}, cleared at ${at})`);
    });
}
