// `npm run bench`'s startup section weighs an install (issue 44): the clone's node_modules, and the part of it a
// production install holds, read from package-lock.json's dev marks, nested and scoped packages attributed to the
// deepest one they sit in. A fake tree on disk, with a dev package far bigger than everything else.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { installSize } from "../../../bench/install-size.ts";

const root = mkdtempSync(join(tmpdir(), "svc-install-size-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const file = (path: string, bytes: number) => {
  mkdirSync(join(root, path, ".."), { recursive: true });
  writeFileSync(join(root, path), Buffer.alloc(bytes, 1));
};

describe("bench: install size", () => {
  it("counts a production install's packages apart from the dev ones, and node-llama-cpp's binaries apart again", () => {
    writeFileSync(
      join(root, "package-lock.json"),
      JSON.stringify({
        packages: {
          "": {},
          "node_modules/runtime": {},
          "node_modules/runtime/node_modules/nested": {},
          "node_modules/@node-llama-cpp/linux-x64": {},
          "node_modules/big-dev-tool": { dev: true },
          "node_modules/@types/thing": { dev: true },
        },
      }),
    );
    file("node_modules/runtime/index.js", 1_000);
    file("node_modules/runtime/node_modules/nested/index.js", 1_000);
    file("node_modules/@node-llama-cpp/linux-x64/bins/llama.node", 100_000);
    file("node_modules/big-dev-tool/lib/huge.js", 2_000_000);
    file("node_modules/@types/thing/index.d.ts", 1_000);
    file("node_modules/.package-lock.json", 10);
    const size = installSize(root);
    expect(size.packages).toEqual({ all: 5, production: 3 });
    expect(size.all - size.production).toBeGreaterThanOrEqual(2_000_000);
    expect(size.production).toBeLessThan(1_000_000);
    expect(size.llamaBinaries).toBeGreaterThanOrEqual(100_000);
    expect(size.llamaBinaries).toBeLessThan(size.production);
  });
});
