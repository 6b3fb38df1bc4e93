// `npm run bench` (bench/README.md): a run leaves the git tree clean, its results saved where .gitignore keeps
// them out of git unless --out asks for another folder.
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { runNode } from "../../harness/cli.ts";

const ROOT = join(import.meta.dirname, "../..");

describe("npm run bench", () => {
  it("saves its results in a folder .gitignore ignores, unless --out names another", async () => {
    const help = await runNode(["--import", "tsx", "bench/run.ts", "--help"], { cwd: ROOT });
    expect(help.code, help.stderr).toBe(0);
    const out = /--out <dir>[^]*?\(default:\s+"([^"]+)"\)/.exec(help.stdout)?.[1];
    expect(out, help.stdout).toBeDefined();
    const folder = relative(ROOT, out!).replace(/\/?$/, "/");
    expect(folder).toBe("bench/results/local/");
    expect(readFileSync(join(ROOT, ".gitignore"), "utf8").split("\n")).toContain(`/${folder}`);
  });
});
