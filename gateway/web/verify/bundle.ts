// The page /verify's script, bundled with esbuild in memory from client.ts and the portable verifier on first
// use and kept for the gateway's life: no generated file in the repository, and the page always runs the
// verifier the gateway itself runs.
import { build } from "esbuild";
import { extname } from "node:path";
import { fileURLToPath } from "node:url";

// beside this file, under this file's own extension: .ts when tsx runs the sources, .js once compiled
const CLIENT = fileURLToPath(new URL(`./client${extname(import.meta.url)}`, import.meta.url));

let script: Promise<string> | undefined;

/** The bundle, built once; a failed build is forgotten so that the next request tries again. */
export function verifierScript(): Promise<string> {
  script ??= browserBundle(CLIENT).then((b) => b.code).catch((err: unknown) => {
    script = undefined;
    throw err;
  });
  return script;
}

/**
 * esbuild's browser build of `entry` with every import inlined (an IIFE for the page; ESM lets a test import
 * it), and the files it took in. It fails on any node: import, which a browser does not have.
 */
export async function browserBundle(entry: string, format: "iife" | "esm" = "iife"): Promise<{ code: string; inputs: string[] }> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    metafile: true,
    platform: "browser",
    format,
    target: ["es2022"],
    minify: true,
    logLevel: "silent",
  });
  return { code: result.outputFiles[0]!.text, inputs: Object.keys(result.metafile.inputs) };
}
