// README "Requirements": the Node lines svc supports, one table behind package.json's engines, the bins' start-up check
// and doctor. (CI runs an unsupported Node against the built bins: .ci/run.)
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ENGINES_NODE, nodeSupported, SUPPORTED_NODE, SUPPORTED_NODE_TEXT, unsupportedNodeLine } from "../../../../src/process/node-support.ts";

describe("Requirements: supported Node lines", () => {
  it("package.json's engines is written from the table, and the README names the same lines and tested versions", () => {
    const pkg = JSON.parse(readFileSync(new URL("../../../../package.json", import.meta.url), "utf8")) as { engines: { node: string } };
    expect(pkg.engines.node).toBe(ENGINES_NODE);
    expect(ENGINES_NODE).toBe("^20.19.0 || ^22.13.0 || ^24.0.0 || ^26.0.0");
    const readme = readFileSync(new URL("../../../../README.md", import.meta.url), "utf8");
    expect(readme).toContain(`Node.js ${SUPPORTED_NODE_TEXT}`);
    for (const line of SUPPORTED_NODE) expect(readme).toContain(line.tested);
  });

  it("accepts each line from its first supported minor, and nothing else", () => {
    for (const ok of ["20.19.0", "20.20.2", "v22.13.0", "22.23.3", "24.0.0", "24.21.0", "26.10.0"]) expect(nodeSupported(ok), ok).toBe(true);
    for (const no of ["18.20.4", "20.18.3", "21.7.3", "22.12.0", "23.11.1", "25.9.0", "27.0.0"]) expect(nodeSupported(no), no).toBe(false);
  });

  it("an unsupported Node gets one line naming the supported ones", () => {
    expect(unsupportedNodeLine("svc-agent", "25.9.0")).toBe(
      "svc-agent: Node 25.9.0 is not supported; svc runs on Node 20.19+, 22.13+, 24 or 26 (see the README's Requirements)",
    );
  });
});
