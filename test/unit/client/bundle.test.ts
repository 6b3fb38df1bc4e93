// The client as a browser gets it (issue 42 item 1): esbuild's browser build of client/index.ts, with every import
// inlined. zod is imported as a namespace wherever the client reaches, so its locales (some 260 KB of messages in
// other languages) are shaken out; a named `import { z }` keeps them all. The bytes a browser gets are then run here.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { browserBundle } from "../../../gateway/web/bundle.ts";
import { ApiError } from "../../../src/errors.ts";
import { FAKE_BASE, fakeBlindGateway } from "../../fixtures/fake-blind-gateway.ts";

const ENTRY = new URL("../../../client/index.ts", import.meta.url).pathname;
/** Minified bytes the whole client graph may take: 729 KB when measured (1,084 KB with `import { z }`). */
const MAX_BYTES = 800_000;

describe("svc-agent-client in a browser: the bundle", () => {
  it(`bundles for the browser in under ${MAX_BYTES / 1000} KB minified, without zod's locales`, async () => {
    const { code, inputs } = await browserBundle(ENTRY, "esm");
    expect(inputs).toEqual(expect.arrayContaining(["client/index.ts", "client/sealed-fetch.ts", "src/blind/seal.ts", "src/openai/route-request.ts", "src/receipt/index.ts"]));
    expect(code).not.toContain("Ungültige Eingabe");
    expect(new TextEncoder().encode(code).length).toBeLessThan(MAX_BYTES);
  });

  it("the bundle's own createSealedFetch seals a request: what leaves it is application/svc-sealed+json without the prompt", async () => {
    const { code } = await browserBundle(ENTRY, "esm");
    const dir = mkdtempSync(join(tmpdir(), "svc-client-bundle-"));
    writeFileSync(join(dir, "client.mjs"), code);
    const bundled = (await import(pathToFileURL(join(dir, "client.mjs")).href)) as typeof import("../../../client/index.ts");
    rmSync(dir, { recursive: true });
    expect(typeof bundled.verifyReceipt).toBe("function");
    const canary = `canary-${randomBytes(8).toString("hex")}`;
    const unavailable = () => Response.json(new ApiError("provider_unavailable", "No provider is available.").toEnvelope(), { status: 503 });
    const { sealed, posted, providerId } = await fakeBlindGateway(bundled.createSealedFetch, unavailable);
    const body = JSON.stringify({ model: "qwen3-4b", messages: [{ role: "user", content: canary }] });
    expect((await sealed(`${FAKE_BASE}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body })).status).toBe(503);
    expect(posted).toHaveLength(1);
    expect(posted[0]!.type).toBe("application/svc-sealed+json");
    expect(posted[0]!.body).not.toContain(canary);
    expect(JSON.parse(posted[0]!.body)).toMatchObject({ v: 1, kind: "chat", alias: "qwen3-4b", candidates: [{ provider: providerId }] });
  });
});
