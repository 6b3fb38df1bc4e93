// A worker thread on one of this package's own modules, whichever way the caller runs: the compiled `.js` beside
// it in dist/, or from the sources (npm start, the unit tests) the `.ts` through tsx, which the worker registers
// for itself first (a worker does not inherit the loader its parent was started with).
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { Worker, type WorkerOptions } from "node:worker_threads";

/** Starts the module `name` (no extension) that sits beside the caller, whose `import.meta.url` is `callerUrl`. */
export function startWorker(callerUrl: string, name: string, options: WorkerOptions = {}): Worker {
  if (!callerUrl.endsWith(".ts")) return new Worker(new URL(`./${name}.js`, callerUrl), options);
  // the package's ESM build of tsx's API, beside the CommonJS one require resolves
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx/esm/api").replace(/\.cjs$/, ".mjs")).href;
  const entry = new URL(`./${name}.ts`, callerUrl).href;
  return new Worker(`import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); });`, { ...options, eval: true });
}
