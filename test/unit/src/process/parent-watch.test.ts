// Processes end together (issue 29): under npm a process watches its parent and, when that parent is the shell npm
// runs scripts in, npm above it, so a SIGKILLed npm (which passes nothing on) does not leave the shell and its child.
// /proc is read through the function given, here a fake of it; test/e2e/lifecycle.test.ts kills a real npx.
import { describe, expect, it, vi } from "vitest";
import { npmAncestors, npmSignalNote, watchNpmParent } from "../../../../src/process/parent-watch.ts";

/** A /proc holding one process, `pid`, named `comm`, whose parent is `ppid`. */
const proc = (pid: number, comm: string, ppid: number) => (asked: number, field: "comm" | "stat") =>
  asked !== pid ? undefined : field === "comm" ? `${comm}\n` : `${pid} (${comm}) S ${ppid} ${pid} ${pid} 0 -1 4194560`;

describe("Processes end together: what a process under npm watches", () => {
  it("a parent that is the shell npm runs scripts in: the shell and npm above it", () => {
    expect(npmAncestors(200, proc(200, "sh", 100))).toEqual([200, 100]);
    expect(npmAncestors(200, proc(200, "dash", 100))).toEqual([200, 100]);
  });

  it("a parent that is no shell (npm itself), or no /proc to read: the parent alone", () => {
    expect(npmAncestors(200, proc(200, "npm exec", 100))).toEqual([200]);
    expect(npmAncestors(200, () => undefined)).toEqual([200]);
  });

  it("a shell whose parent is init (npm is already gone) adds nothing to watch", () => {
    expect(npmAncestors(200, proc(200, "sh", 1))).toEqual([200]);
  });
});

describe("Processes end together: a parent gone while this process was starting", () => {
  const npm = { npm_command: "exec" };
  /** Above Linux's largest pid_max (2^22): no process has it, ever. */
  const ENDED = 2 ** 22 + 1;

  it("a parent that is no longer this process's parent (it ended; init took the child) is gone at once", async () => {
    const onGone = vi.fn();
    const stop = watchNpmParent(onGone, npm, ENDED);
    await vi.waitFor(() => expect(onGone).toHaveBeenCalled());
    stop();
  });

  it("the parent this process still has is watched, not taken for gone; outside npm nothing is watched", async () => {
    const onGone = vi.fn();
    const stops = [watchNpmParent(onGone, npm, process.ppid), watchNpmParent(onGone, {}, ENDED)];
    await new Promise((resolve) => setImmediate(resolve));
    expect(onGone).not.toHaveBeenCalled();
    for (const stop of stops) stop();
  });
});
describe("Processes end together: a SIGINT npm keeps in its shell (issue 44)", () => {
  const npm = { npm_command: "exec" };

  it("under npm through a shell, says that SIGINT to npm's pid stops nothing and what does", () => {
    expect(npmSignalNote(npm, 200, proc(200, "sh", 100))).toBe(
      "npm runs this in a shell (pid 200) that keeps a SIGINT sent to npm's pid (100) from it: to stop it from a script, send SIGTERM (kill 100) or signal the process group, as Ctrl-C does",
    );
  });

  it("says nothing where the SIGINT does arrive: npm as the parent (npm start's exec), or no npm at all", () => {
    expect(npmSignalNote(npm, 200, proc(200, "npm start", 100))).toBeUndefined();
    expect(npmSignalNote({}, 200, proc(200, "sh", 100))).toBeUndefined();
  });
});
