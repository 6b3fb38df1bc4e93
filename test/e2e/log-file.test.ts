// `start --log-file`: the agent's lines go, timestamped, to a file that rotates past its size cap and
// keeps three old generations, so an agent left running as a service never fills the disk.
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { LOG_KEEP, RotatingLog } from "../../agent/daemon/log-file.ts";
import { AGENT_BIN, startProcess } from "../../harness/process.ts";
import { tempDir } from "../fixtures/tiny-catalog.ts";

const dir = tempDir("svc-log-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("RotatingLog", () => {
  it("rotates FILE to FILE.1 past the cap and keeps three old files", () => {
    const path = join(dir, "rotate", "agent.log");
    const at = new Date("2030-01-02T03:04:05.000Z");
    // each line is 24 (timestamp and space) + 76 + 1 = 101 bytes; the cap holds nine of them
    const log = new RotatingLog(path, 1000 / (1024 * 1024), () => at);
    const line = (n: number) => `line ${String(n).padStart(3, "0")} ${"x".repeat(67)}`;
    for (let n = 0; n < 50; n++) log.write(line(n));
    const read = (suffix: string) => readFileSync(`${path}${suffix}`, "utf8").trimEnd().split("\n");
    expect(read("")).toEqual([45, 46, 47, 48, 49].map((n) => `2030-01-02T03:04:05.000Z ${line(n)}`));
    expect(read(".1")).toEqual([36, 37, 38, 39, 40, 41, 42, 43, 44].map((n) => `2030-01-02T03:04:05.000Z ${line(n)}`));
    expect(read(".3")[0]).toBe(`2030-01-02T03:04:05.000Z ${line(18)}`);
    expect(existsSync(`${path}.${LOG_KEEP + 1}`)).toBe(false);
  });

  it("a log file that cannot be written names --log-file", () => {
    expect(() => new RotatingLog("/proc/nope/agent.log")).toThrow("--log-file /proc/nope/agent.log: cannot write it (ENOENT: no such file or directory, mkdir '/proc/nope')");
  });

  it("appends to what an earlier run left, counting it toward the cap", () => {
    const path = join(dir, "append", "agent.log");
    new RotatingLog(path, 1, () => new Date(0)).write("first run");
    new RotatingLog(path, 1, () => new Date(0)).write("second run");
    expect(readFileSync(path, "utf8")).toBe("1970-01-01T00:00:00.000Z first run\n1970-01-01T00:00:00.000Z second run\n");
  });
});

describe("svc-agent start --log-file", () => {
  it("writes its lines to the file instead of stdout", async () => {
    const dataDir = join(dir, "agent");
    const logFile = join(dataDir, "logs", "svc-agent.log");
    // nothing listens on port 1: the agent keeps reconnecting and logs each attempt
    const agent = startProcess(AGENT_BIN, ["start", "--coordinator", "http://127.0.0.1:1", "--data-dir", dataDir, "--engine", "synthetic", "--log-file", logFile]);
    try {
      await expect.poll(() => (existsSync(logFile) ? readFileSync(logFile, "utf8") : ""), { timeout: 20_000 }).toMatch(
        /^\d{4}-\d\d-\d\dT[\d:.]+Z svc-agent: created keys in .+\n(.*\n)*.*disconnected: /,
      );
    } finally {
      await agent.stop();
    }
    expect(agent.stdout()).toBe("");
    expect(readFileSync(logFile, "utf8")).toMatch(/svc-agent: stopped\n$/);
  });
});
