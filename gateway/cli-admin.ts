// `svc-gateway providers|release|keys`: the commands that work on the key store and on release manifests.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Command, InvalidArgumentError, Option } from "commander";
import { DEFAULT_DATA_DIR } from "../src/process/data-dir.ts";
import { collect, limitOverride, positiveInteger } from "../src/process/cli-options.ts";
import { hexPattern } from "../src/receipt/patterns.ts";
import { parseExpiry, tokenTable } from "./keys/provider-tokens.ts";
import { DEFAULT_MAX_KEYS_PER_USER, type KeyLimits, type KeyStore } from "./keys/key-store.ts";
import { USAGE_DAYS } from "./keys/usage.ts";

/**
 * The key store's operations, loaded in the actions: its drivers (libsql, pg) and the release signing are more than
 * `--help` and the other commands should pay for at every start.
 */
export const keysAdmin = () => import("./keys/keys-admin.ts");

/** `--user`: a user's id (digits) or email address. */
function userRef(value: string): number | string {
  if (/^\d+$/.test(value)) return Number(value);
  if (!value.includes("@")) throw new InvalidArgumentError("expected a user's email address or id (svc-gateway users list)");
  return value;
}

/** The gateway's state under the shared data dir: the key store, whose enrollment tokens the coordinator reads. */
export const DEFAULT_GATEWAY_DIR = join(DEFAULT_DATA_DIR, "gateway");

const dataDirOption = () => new Option("--data-dir <dir>", "gateway state, as given to serve").default(DEFAULT_GATEWAY_DIR);

/** `--database`: the PostgreSQL key store replicas share, as given to serve; it wins over --data-dir. */
export const databaseOption = () =>
  new Option("--database <url>", "the PostgreSQL key store (postgres://…) shared by replicas, instead of the SQLite file under --data-dir").env("SVC_DATABASE_URL");

export function addAdminCommands(program: Command): void {
  const providers = program.command("providers").description("provider enrollment tokens: who may join the coordinator as a provider");
  const storeOption = () => new Option("--data-dir <dir>", "the gateway's data dir, whose key store the coordinator reads").default(DEFAULT_GATEWAY_DIR);

  providers
    .command("enroll")
    .description("issue an enrollment token for a provider machine (shown once); the agent takes it as --token")
    .option("--name <label>", "what the token is for", "provider")
    .option("--expires <when>", "a duration (90m, 12h, 30d) or a date (2027-01-31); default: never")
    .option("--json", "print {id, name, token, prefix, created_at, expires_at} as JSON")
    .addOption(storeOption())
    .addOption(databaseOption())
    .action(async (opts: { name: string; expires?: string; json?: boolean; dataDir: string; database?: string }) => {
      const expiresAt = opts.expires === undefined ? null : parseExpiry(opts.expires);
      const { withKeyStore } = await keysAdmin();
      const { token, secret } = await withKeyStore(opts, (store) => store.enrollProvider(opts.name, expiresAt), true);
      if (opts.json) {
        const { id, name, prefix, createdAt, expiresAt: expires } = token;
        console.log(JSON.stringify({ id, name, token: secret, prefix, created_at: createdAt, expires_at: expires }));
        return;
      }
      console.error(`svc-gateway: enrollment token ${token.id} (${token.name}${expiresAt === null ? "" : `, expires ${new Date(expiresAt).toISOString()}`}); it is shown once:`);
      console.log(secret);
      console.error("svc-gateway: the provider saves it to a file only they can read and joins with: svc-agent start --coordinator URL --token-file FILE (or SVC_PROVIDER_TOKEN)");
    });

  providers
    .command("list")
    .description("list enrollment tokens (never their secrets)")
    .option("--json", "print the tokens as a JSON array")
    .addOption(storeOption())
    .addOption(databaseOption())
    .action(async (opts: { json?: boolean; dataDir: string; database?: string }) => {
      const tokens = await (await keysAdmin()).withKeyStore(opts, (store) => store.listProviderTokens());
      console.log(opts.json ? JSON.stringify(tokens) : tokenTable(tokens));
    });

  providers
    .command("revoke")
    .description("revoke an enrollment token: no new connections with it; agents connected with it are disconnected within seconds")
    .argument("<id>", "the token's id (ptk_…), from providers list")
    .addOption(storeOption())
    .addOption(databaseOption())
    .action(async (id: string, opts: { dataDir: string; database?: string }) => {
      const revoked = await (await keysAdmin()).withKeyStore(opts, (store) => store.revokeProviderToken(id));
      if (!revoked) throw new Error(`providers revoke ${id}: no live enrollment token has that id (see providers list)`);
      console.log(`svc-gateway: revoked ${id}`);
    });

  const release = program.command("release").description("release keys and signed manifests for the transparent rung");

  release
    .command("keygen")
    .description("create an Ed25519 release key (PKCS#8 PEM, mode 0600) and print its public key for --release-keys")
    .requiredOption("--out <file>", "where to write the private key")
    .action(async (opts: { out: string }) => {
      const { Signer } = await import("../src/crypto/signing.ts");
      const pem = Signer.generatePem();
      writeFileSync(opts.out, pem, { mode: 0o600, flag: "wx" });
      console.log(Signer.fromPem(pem).publicKey);
    });

  release
    .command("sign")
    .description("write a release manifest listing code measurements, signed with a release key")
    .requiredOption("--key <file>", "the release key (PKCS#8 PEM from `release keygen`)")
    .requiredOption("--out <file>", "where to write the manifest")
    .option("--measurement <hex>", "a measurement to list (repeatable; default: this build's, as `svc-agent measure` prints)", collect, [])
    .action(async (opts: { key: string; out: string; measurement: string[] }) => {
      const [{ measure }, { signManifest }, { Signer }] = await Promise.all([import("../src/trust/measure.ts"), import("../src/trust/release-manifest.ts"), import("../src/crypto/signing.ts")]);
      const measurements = opts.measurement.length > 0 ? opts.measurement : [measure()];
      for (const m of measurements) if (!hexPattern(64).test(m)) throw new Error(`--measurement ${m}: expected 64 lowercase hex characters`);
      const manifest = signManifest(Signer.fromPem(readFileSync(opts.key, "utf8")), measurements);
      writeFileSync(opts.out, `${JSON.stringify(manifest, null, 2)}\n`);
      console.log(`svc-gateway: manifest for ${measurements.length} measurement(s) signed by ${manifest.release_key} at ${opts.out}`);
    });

  const keys = program.command("keys").description("user API keys in the key store: list them, set a key's rate limits, show usage");

  keys
    .command("list")
    .description("every user's keys, newest first: id, prefix, owner, name, state, rate limits")
    .addOption(dataDirOption())
    .addOption(databaseOption())
    .action(async (opts: { dataDir: string; database?: string }) => {
      const { listKeys, withKeyStore } = await keysAdmin();
      for (const line of await withKeyStore(opts, listKeys)) console.log(line);
    });

  limitCommand(keys.command("limit").argument("<key-id>", "the key's id (key_…), from keys list"), "--key-* defaults for one key", "", async (store, id: string, changes) => (await keysAdmin()).setKeyLimits(store, id, changes));

  keys
    .command("create")
    .description("make an API key for a user who has signed in before (shown once), within the cap on live keys per user; every gateway on this key store takes it, with or without sign-in")
    .requiredOption("--user <user>", "the user: their email address or id, from users list", userRef)
    .option("--name <label>", "what the key is for", "cli")
    .option("--max-keys-per-user <n>", "the cap, as given to serve", positiveInteger, DEFAULT_MAX_KEYS_PER_USER)
    .option("--json", "print {id, name, secret, prefix, user_id, created_at} as JSON")
    .addOption(dataDirOption())
    .addOption(databaseOption())
    .action(async (opts: { user: number | string; name: string; maxKeysPerUser: number; json?: boolean; dataDir: string; database?: string }) => {
      const { createUserKey, withKeyStore } = await keysAdmin();
      const { key, secret, userId } = await withKeyStore(opts, (store) => createUserKey(store, opts.user, opts.name, opts.maxKeysPerUser));
      if (opts.json) {
        console.log(JSON.stringify({ id: key.id, name: key.name, secret, prefix: key.prefix, user_id: userId, created_at: key.createdAt }));
        return;
      }
      console.error(`svc-gateway: key ${key.id} (${key.name}) for user ${userId}; it is shown once:`);
      console.log(secret);
    });

  keys
    .command("revoke")
    .description("revoke any user's key: every gateway on this store refuses it within a second")
    .argument("<key-id>", "the key's id (key_…), from keys list")
    .option("--json", "print {id, revoked: true} as JSON")
    .addOption(dataDirOption())
    .addOption(databaseOption())
    .action(async (id: string, opts: { json?: boolean; dataDir: string; database?: string }) => {
      const hash = await (await keysAdmin()).withKeyStore(opts, (store) => store.revokeAnyKey(id));
      if (hash === undefined) throw new Error(`keys revoke ${id}: no live key has that id (see keys list)`);
      console.log(opts.json ? JSON.stringify({ id, revoked: true }) : `svc-gateway: revoked ${id}`);
    });

  keys
    .command("migrate")
    .description("copy an SQLite key store (users, keys, sessions, enrollment tokens, usage) into an empty PostgreSQL one")
    .requiredOption("--from-data-dir <dir>", "the data dir whose keys.sqlite to copy, as given to serve")
    .addOption(databaseOption().makeOptionMandatory())
    .action(async (opts: { fromDataDir: string; database: string }) => {
      const [{ copyStore, withKeyStore }, { STORE_FILE }, { redactUrl }] = await Promise.all([keysAdmin(), import("./keys/sqlite-schema.ts"), import("./keys/open-store.ts")]);
      const file = join(opts.fromDataDir, STORE_FILE);
      if (!existsSync(file)) throw new Error(`--from-data-dir ${opts.fromDataDir}: no key store there (${file})`);
      const counts = await withKeyStore({ dataDir: opts.fromDataDir }, (from) => withKeyStore({ dataDir: opts.fromDataDir, database: opts.database }, (to) => copyStore(from, to)));
      console.log(`svc-gateway: copied ${Object.entries(counts).map(([table, n]) => `${n} ${table}`).join(", ")} into ${redactUrl(opts.database)}`);
    });

  keys
    .command("usage")
    .description("requests and tokens per key (operator keys too) and per provider over the last N UTC days, from verified receipts")
    .option("--days <n>", "how many days, today included", positiveInteger, USAGE_DAYS)
    .addOption(dataDirOption())
    .addOption(databaseOption())
    .action(async (opts: { dataDir: string; database?: string; days: number }) => {
      const [{ withKeyStore }, { usageReport }] = await Promise.all([keysAdmin(), import("./keys/usage-report.ts")]);
      console.log(await withKeyStore(opts, (store) => usageReport(store, opts.days)));
    });
}

/** `svc-gateway users`: who has signed in, and each user's limits over all of their keys. */
export function addUserCommands(program: Command): void {
  const users = program.command("users").description("signed-in users: list them with their live keys, set a user's rate limits over all their keys");

  users
    .command("list")
    .description("every user, oldest first: id, email, live keys, per-user rate limits")
    .addOption(dataDirOption())
    .addOption(databaseOption())
    .action(async (opts: { dataDir: string; database?: string }) => {
      const { listUsers, withKeyStore } = await keysAdmin();
      for (const line of await withKeyStore(opts, listUsers)) console.log(line);
    });

  const limit = users.command("limit").argument("<user-id>", "the user's id, from users list", positiveInteger);
  limitCommand(limit, "--user-* defaults for one user", " over all the user's keys", async (store, id: number, changes) => (await keysAdmin()).setUserLimits(store, id, changes));
}

type Override = number | "default";
/** What the store keeps for an override: a number, null for `default`, undefined where the flag was not given. */
const stored = (value: Override | undefined): number | null | undefined => (value === "default" ? null : value);

/** `keys limit` and `users limit`: the three overrides (N, or `default`), set on the one key or user named. */
function limitCommand<Id>(command: Command, defaults: string, scope: string, set: (store: KeyStore, id: Id, changes: Partial<KeyLimits>) => Promise<string>): void {
  command
    .description(`override the serve ${defaults} (N, or \`default\`); a running gateway applies it within 10 s`)
    .option("--concurrency <n>", `requests in flight${scope}`, limitOverride)
    .option("--rpm <n>", `requests per minute${scope}`, limitOverride)
    .option("--tpm <n>", `tokens per minute${scope}`, limitOverride)
    .addOption(dataDirOption())
    .addOption(databaseOption())
    .action(async (id: Id, opts: { dataDir: string; database?: string; concurrency?: Override; rpm?: Override; tpm?: Override }) => {
      const changes = { maxConcurrency: stored(opts.concurrency), rpm: stored(opts.rpm), tpm: stored(opts.tpm) };
      console.log(await (await keysAdmin()).withKeyStore(opts, (store) => set(store, id, changes)));
    });
}
