import { defineConfig } from "vitest/config";

// Three projects (README "Two commands"): `unit` starts no process and loads no model (`npm run test:unit`),
// `engine` runs llama.cpp in-process on the tiny GGUF, `e2e` starts the compiled bins as real processes.
export default defineConfig({
  test: {
    // node-llama-cpp's native addon belongs in its own process, not a worker thread
    pool: "forks",
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      { extends: true, test: { name: "unit", include: ["test/unit/**/*.test.ts"] } },
      { extends: true, test: { name: "engine", include: ["test/engine/**/*.test.ts"] } },
      {
        extends: true,
        test: { name: "e2e", include: ["test/e2e/**/*.test.ts"], globalSetup: ["test/setup/global.ts"], setupFiles: ["test/setup/each-file.ts"] },
      },
    ],
  },
});
