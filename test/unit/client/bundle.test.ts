// The client as a browser gets it (issue 42 item 1): esbuild's browser build of client/index.ts, with every import
// inlined. zod is imported as a namespace wherever the client reaches, so its locales (some 260 KB of messages in
// other languages) are shaken out; a named `import { z }` keeps them all.
import { describe, expect, it } from "vitest";
import { browserBundle } from "../../../gateway/web/verify/bundle.ts";

const ENTRY = new URL("../../../client/index.ts", import.meta.url).pathname;
/** Minified bytes the whole client graph may take: 729 KB when measured (1,084 KB with `import { z }`). */
const MAX_BYTES = 800_000;

describe("svc-client in a browser: the bundle", () => {
  it(`bundles for the browser in under ${MAX_BYTES / 1000} KB minified, without zod's locales`, async () => {
    const { code, inputs } = await browserBundle(ENTRY, "esm");
    expect(inputs).toEqual(expect.arrayContaining(["client/index.ts", "client/sealed-fetch.ts", "src/blind/seal.ts", "src/openai/route-request.ts", "src/receipt/index.ts"]));
    expect(code).not.toContain("Ungültige Eingabe");
    expect(new TextEncoder().encode(code).length).toBeLessThan(MAX_BYTES);
  });
});
