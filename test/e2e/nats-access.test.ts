// docs/operator-guide.md "Running more than one gateway", NATS access: a replica proves itself to NATS servers that
// ask (a token or a user and password in the --nats URL) and checks a TLS server against --nats-tls-ca. With real
// nats-servers: one refused is one line naming --nats, exit code 2, and no secret in it; one accepted serves.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GATEWAY_BIN, startProcess } from "../../harness/process.ts";
import { startReady } from "../../harness/ready.ts";
import { startNatsServer, type NatsNode } from "../../harness/nats.ts";

const TOKEN = "tok-a8f3c1e9d2b7";
const USER = "replica";
const PASSWORD = "pw-5e0d4c3b2a19";
const dir = mkdtempSync(join(tmpdir(), "svc-nats-access-"));
let withToken: NatsNode;
let withPassword: NatsNode;
let withTls: NatsNode;
let dirs = 0;

/** A CA and a server certificate for localhost it signs, made with the openssl CLI. (The NATS client checks a
 * certificate against the host name in the URL, so TLS servers are named by a name, not an IP address.) */
function makeTlsFiles(): { ca: string; cert: string; key: string } {
  const [ca, caKey, cert, key, csr, ext] = ["ca.pem", "ca.key", "server.pem", "server.key", "server.csr", "san.ext"].map((f) => join(dir, f)) as [string, string, string, string, string, string];
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  execFileSync("openssl", ["req", "-x509", ...ec, "-keyout", caKey, "-out", ca, "-days", "2", "-subj", "/CN=svc test NATS CA"], { stdio: "ignore" });
  execFileSync("openssl", ["req", ...ec, "-keyout", key, "-out", csr, "-subj", "/CN=localhost"], { stdio: "ignore" });
  writeFileSync(ext, "subjectAltName=DNS:localhost\n");
  execFileSync("openssl", ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", caKey, "-CAcreateserial", "-out", cert, "-days", "2", "-extfile", ext], { stdio: "ignore" });
  return { ca, cert, key };
}

beforeAll(async () => {
  const tls = makeTlsFiles();
  withToken = await startNatsServer(["--auth", TOKEN]);
  withPassword = await startNatsServer(["--user", USER, "--pass", PASSWORD]);
  withTls = await startNatsServer(["--tls", "--tlscert", tls.cert, "--tlskey", tls.key]);
}, 60_000);

afterAll(async () => {
  await Promise.all([withToken, withPassword, withTls].map((n) => n?.proc.stop()));
  rmSync(dir, { recursive: true, force: true });
});

/** A gateway alone: it trusts no coordinator yet (an empty --coordinator-keys), which is all these tests need. */
const KEYS = join(dir, "coordinator-keys");
writeFileSync(KEYS, "");
const gatewayArgs = (nats: string, extra: string[] = []) => ["--port", "0", "--no-coordinator", "--coordinator-keys", KEYS, "--data-dir", join(dir, `gw-${++dirs}`), "--nats", nats, ...extra];

/** `serve --no-coordinator` on these NATS settings, expected to be refused: its exit code and stderr. */
async function refused(nats: string, extra: string[] = []): Promise<{ code: number | null; stderr: string }> {
  const proc = startProcess(GATEWAY_BIN, ["serve", ...gatewayArgs(nats, extra)]);
  await proc.exited;
  return { code: proc.child.exitCode, stderr: proc.stderr() };
}

/** Expects it to start and serve; stops it. Its output names no secret. */
async function accepted(nats: string, extra: string[] = []): Promise<void> {
  const proc = await startReady("svc-gateway serve", gatewayArgs(nats, extra));
  const health = await fetch(`${proc.ready.gateway}/healthz`);
  expect(health.status).toBe(200);
  await proc.stop();
  expect(`${proc.stdout()}${proc.stderr()}`).not.toMatch(new RegExp(`${TOKEN}|${PASSWORD}`));
}

const port = (node: NatsNode) => node.url.slice("nats://".length);

describe("Running more than one gateway: NATS access", () => {
  it("a server that asks for a token refuses a replica without it (one line naming --nats, exit 2) and accepts one with it in the URL", async () => {
    const without = await refused(withToken.url);
    expect(without.code).toBe(2);
    expect(without.stderr).toMatch(/^svc-gateway: --nats: cannot reach nats:\/\/127\.0\.0\.1:\d+ \([^\n]*\); give credentials in the URL[^\n]*--nats-creds FILE\n$/);
    await accepted(`nats://${TOKEN}@${port(withToken)}`);
  }, 60_000);

  it("a server that asks for a user and password refuses a wrong password without printing it, and accepts the right one", async () => {
    const wrong = await refused(`nats://${USER}:not-${PASSWORD}@${port(withPassword)}`);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/^svc-gateway: --nats: cannot reach nats:\/\/127\.0\.0\.1:\d+ \([^\n]*\n$/);
    expect(wrong.stderr).not.toContain(PASSWORD);
    await accepted(`nats://${USER}:${PASSWORD}@${port(withPassword)}`);
  }, 60_000);

  it("a TLS server is checked against --nats-tls-ca: refused without the CA, accepted with it", async () => {
    const server = `tls://localhost:${port(withTls).split(":")[1]}`;
    const unknown = await refused(server);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^svc-gateway: --nats: cannot reach tls:\/\/localhost:\d+ \([^\n]*\)\n$/);
    await accepted(server, ["--nats-tls-ca", join(dir, "ca.pem")]);
  }, 60_000);

  it("a --nats-tls-ca that cannot be read is one line naming the flag, exit 2", async () => {
    const missing = await refused(withTls.url, ["--nats-tls-ca", join(dir, "no-such-ca.pem")]);
    expect(missing).toEqual({ code: 2, stderr: `svc-gateway: --nats-tls-ca ${join(dir, "no-such-ca.pem")}: cannot read it (ENOENT)\n` });
  });
});
