// docs/operator-guide.md "API keys and the settings page" (SPEC §5): the gateway's data dir is 0700 and its key store (with the
// WAL and shared-memory files), cookie secret and gateway-link secret are 0600; looser ones left by an older install are tightened
// at start, one warning line each. Unit checks on a temp dir, then a real gateway with sign-in.
import { chmodSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { makePrivateDataDir, PRIVATE_FILES } from "../../gateway/keys/private-files.ts";
import { SqliteKeyStore } from "../../gateway/keys/sqlite-store.ts";
import { STORE_FILE } from "../../gateway/keys/sqlite-schema.ts";
import { loadCookieSecret } from "../../gateway/web/session.ts";
import { dataDirGatewaySecret } from "../../gateway/keys/gateway-secret.ts";
import { startSettingsGateway, type SettingsGateway } from "../fixtures/settings-gateway.ts";
import { tempDir } from "../fixtures/tiny-catalog.ts";

const dirs: string[] = [];
const freshDir = () => dirs[dirs.push(tempDir("svc-modes-")) - 1]!;
afterEach(() => dirs.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true })));

const mode = (path: string) => statSync(path).mode & 0o777;
const storeFiles = (dir: string) => [STORE_FILE, `${STORE_FILE}-wal`, `${STORE_FILE}-shm`].map((name) => join(dir, name));

describe("§5 the data dir and the key store are the owner's alone", () => {
  it("a fresh data dir is 0700; the store and its -wal and -shm files are 0600; nothing is warned", () => {
    const dir = join(freshDir(), "nested", "gateway");
    const warnings: string[] = [];
    makePrivateDataDir(dir, (line) => warnings.push(line));
    const store = SqliteKeyStore.open(dir);
    store.upsertUser({ issuer: "https://id.example", subject: "alice", email: null, name: null });
    expect(mode(dir)).toBe(0o700);
    for (const path of storeFiles(dir)) expect([path, mode(path)]).toEqual([path, 0o600]);
    store.close();
    expect(warnings).toEqual([]);
  });

  it("a 0755 dir and 0644 files from before are tightened, one warning line each, and their data kept", () => {
    const dir = join(freshDir(), "gateway");
    mkdirSync(dir, { mode: 0o755 });
    chmodSync(dir, 0o755);
    const files = [...storeFiles(dir), join(dir, "session-secret")];
    for (const path of files) {
      writeFileSync(path, "");
      chmodSync(path, 0o644);
    }
    writeFileSync(join(dir, "session-secret"), Buffer.alloc(32, 7));
    const warnings: string[] = [];
    makePrivateDataDir(dir, (line) => warnings.push(line));
    expect(mode(dir)).toBe(0o700);
    for (const path of files) expect([path, mode(path)]).toEqual([path, 0o600]);
    expect(warnings).toEqual([
      `${dir} had mode 0755, open to other users; changed it to 0700`,
      ...files.map((path) => `${path} had mode 0644, open to other users; changed it to 0600`),
    ]);
    expect(loadCookieSecret(dir)).toEqual(Buffer.alloc(32, 7));
  });

  it("a stricter mode is the owner's choice and stays", () => {
    const dir = freshDir();
    chmodSync(dir, 0o500);
    const warnings: string[] = [];
    makePrivateDataDir(dir, (line) => warnings.push(line));
    expect([mode(dir), warnings]).toEqual([0o500, []]);
    chmodSync(dir, 0o700);
  });

  it("the private list names every file the store, the cookie secret and the gateway-link secret make", () => {
    const dir = freshDir();
    SqliteKeyStore.open(dir).close();
    loadCookieSecret(dir);
    expect(mode(dataDirGatewaySecret(dir).path)).toBe(0o600);
    expect(PRIVATE_FILES).toEqual(expect.arrayContaining([STORE_FILE, `${STORE_FILE}-wal`, `${STORE_FILE}-shm`]));
    for (const name of readdirSync(dir)) expect(PRIVATE_FILES).toContain(name);
  });
});

describe("§5 a real gateway with sign-in: modes on a fresh start and after a restart", () => {
  let gateway: SettingsGateway;
  afterAll(() => gateway?.stop());

  it("starts with 0700 / 0600, and a restart tightens what was loosened with one log line each", async () => {
    gateway = await startSettingsGateway();
    const dir = gateway.dataDir;
    const files = [...storeFiles(dir), join(dir, "session-secret"), join(dir, "gateway-secret")];
    expect(mode(dir)).toBe(0o700);
    for (const path of files) expect([path, mode(path)]).toEqual([path, 0o600]);
    expect(gateway.proc.logs().filter((l) => l.level === 40)).toEqual([]);

    await gateway.proc.stop();
    chmodSync(dir, 0o755);
    const loosened = files.filter((path) => statSync(path, { throwIfNoEntry: false }));
    for (const path of loosened) chmodSync(path, 0o644);
    await gateway.restart();
    expect(mode(dir)).toBe(0o700);
    for (const path of loosened) expect([path, mode(path)]).toEqual([path, 0o600]);
    const warned = gateway.proc.logs().filter((l) => l.level === 40).map((l) => l.msg);
    expect(warned).toEqual([
      `${dir} had mode 0755, open to other users; changed it to 0700`,
      ...loosened.map((path) => `${path} had mode 0644, open to other users; changed it to 0600`),
    ]);
  });
});
