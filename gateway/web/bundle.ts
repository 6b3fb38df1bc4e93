// The pages' scripts (/verify, /chat), bundled with esbuild in memory from their sources on first use and kept for
// the gateway's life: no generated file in the repository, and each page runs the very code the gateway runs.
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Plugin } from "esbuild";

/** A source file beside `base` (an import.meta.url), under the caller's own extension: .ts from tsx, .js once compiled. */
export const besideSource = (name: string, base: string): string => fileURLToPath(new URL(`${name}${extname(base)}`, base));

/** A bundle's text and its SHA-256 (hex), for the page that shows it. */
export interface Script {
  code: string;
  sha256: string;
}

/**
 * The bundle of `entry`, built once; a failed build is forgotten so that the next request tries again. `external`
 * maps an imported source (by its absolute path) to the URL the page loads it from, so two scripts share one module.
 */
export function bundledOnce(entry: string, format: "iife" | "esm" = "iife", external: Record<string, string> = {}): () => Promise<Script> {
  return scriptOnce(async () => (await browserBundle(entry, format, external)).code);
}

/** A built script file, read once and kept, as bundledOnce keeps a bundle. */
export const fileOnce = (path: string): (() => Promise<Script>) => scriptOnce(() => readFile(path, "utf8"));

/** A script's text and hash, made once; a failure is forgotten so that the next request tries again. */
function scriptOnce(make: () => Promise<string>): () => Promise<Script> {
  let script: Promise<Script> | undefined;
  return () => {
    script ??= make().then((code) => ({ code, sha256: createHash("sha256").update(code).digest("hex") })).catch((err: unknown) => {
      script = undefined;
      throw err;
    });
    return script;
  };
}

/**
 * esbuild's browser build of `entry` with every import inlined (an IIFE for a page; ESM lets a test or another module
 * import it), and the files it took in. It fails on any node: import, which a browser does not have.
 */
export async function browserBundle(entry: string, format: "iife" | "esm" = "iife", external: Record<string, string> = {}): Promise<{ code: string; inputs: string[] }> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    metafile: true,
    platform: "browser",
    format,
    target: ["es2022"],
    minify: true,
    // as client/build.ts builds browser.js: the /chat page serves the very bytes the client package ships
    legalComments: "none",
    logLevel: "silent",
    plugins: Object.keys(external).length === 0 ? [] : [externalUrls(external)],
  });
  return { code: result.outputFiles[0]!.text, inputs: Object.keys(result.metafile.inputs) };
}

/** Resolves an import of one of `external`'s files to its URL, left for the browser to load. */
function externalUrls(external: Record<string, string>): Plugin {
  return {
    name: "external-urls",
    setup(b) {
      b.onResolve({ filter: /.*/ }, ({ path, resolveDir }) => {
        if (!path.startsWith(".")) return undefined;
        const absolute = fileURLToPath(new URL(path, `file://${resolveDir}/`));
        const url = external[absolute];
        return url === undefined ? undefined : { path: url, external: true };
      });
    },
  };
}
