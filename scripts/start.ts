// `npm start`: will bring up gateway, coordinator and one agent on this machine. Until the gateway and
// coordinator exist it says so, points at what does work, and exits non-zero rather than pretend.
const lines = [
  "svc: the gateway and coordinator are not built yet, so `npm start` cannot bring up a service today.",
  "",
  "What works now:",
  "  npx svc-agent catalog            # the pinned model catalog, and what this machine can serve",
  "  npx svc-agent catalog --json     # the GET /v1/catalog body",
  "  npx svc-agent pull qwen3-4b      # download and verify the pinned GGUF (needs the model hub)",
  "  npm test                         # real llama.cpp inference on a generated tiny qwen3 model",
];
console.error(lines.join("\n"));
process.exitCode = 1;
