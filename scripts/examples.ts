// The commands and snippets `npm start` and `npm run demo` print: one example per route (chat, Responses,
// embeddings), the receipt check, and the OpenAI SDKs (Node first: this is a Node project). Each works as printed
// from any folder: the bins are named by absolute path (the package is not on npm, so `npx svc-agent` outside the
// clone finds nothing), and the key goes in through the environment and stdin, never on a command line, where ps shows it.
import { fileURLToPath } from "node:url";

/** The clone's bins: the TypeScript sources through tsx, as `npm start` runs its agent. */
export const BIN = {
  "svc-agent": fileURLToPath(new URL("../bin/svc-agent.js", import.meta.url)),
  "svc-gateway": fileURLToPath(new URL("../bin/svc-gateway.js", import.meta.url)),
} as const;

/** A word as sh reads it back: bare when it is plain, else in single quotes. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** `BIN args…` as one command line. */
export const binCommand = (bin: keyof typeof BIN, args: readonly string[]): string => [BIN[bin], ...args].map(shellWord).join(" ");

/** The models the examples use: a chat model, and an embedding model when one is served. */
export interface ExampleModels {
  chat: string;
  embedding?: string;
}

/** A POST with the key from $SVC_API_KEY through stdin, as two lines (`-w '\n'` ends the body's line); `tail` follows the curl (`| tee FILE`). */
function curl(base: string, path: string, body: unknown, tail = ""): string[] {
  return [
    `printf 'Authorization: Bearer %s\\n' "$SVC_API_KEY" | curl -s -w '\\n' ${base}${path} -H @- \\`,
    `  -H "Content-Type: application/json" -d ${shellWord(JSON.stringify(body))}${tail}`,
  ];
}

/** The answer the chat example saves, for the receipt check. */
export const ANSWER_FILE = "answer.json";

/**
 * Shell lines, unindented: the key into the environment, then one curl per route (the chat answer kept in
 * answer.json), and the receipt check of that answer against the gateway's provider listing.
 */
export function routeExamples(base: string, key: string, models: ExampleModels): string[] {
  const say = "Say hello.";
  return [
    `export SVC_API_KEY=${key}`,
    "",
    `# chat completions (the answer is kept in ${ANSWER_FILE} for the receipt check below)`,
    ...curl(base, "/chat/completions", { model: models.chat, messages: [{ role: "user", content: say }], max_tokens: 64 }, ` | tee ${ANSWER_FILE}`),
    "",
    "# Responses",
    ...curl(base, "/responses", { model: models.chat, input: say, max_output_tokens: 64 }),
    "",
    ...(models.embedding === undefined
      ? [`# embeddings: no embedding model is downloaded; ${binCommand("svc-agent", ["pull", "qwen3-embedding-0.6b"])} fetches one`]
      : ["# embeddings", ...curl(base, "/embeddings", { model: models.embedding, input: say })]),
    "",
    "# verify: the receipt in every answer is signed by the provider; this checks the saved one against the",
    "# gateway's provider listing (without --providers it can only say UNVERIFIED); it reads SVC_API_KEY",
    binCommand("svc-agent", ["verify", ANSWER_FILE, "--providers", base]),
  ];
}

/** The OpenAI SDKs, Node first, then Python: snippets, unindented. */
export function sdkExamples(base: string, model: string): string[] {
  const content = "Say hello.";
  return [
    "# Node: npm install openai (this clone has it), then as an ES module (node hello.mjs):",
    'import OpenAI from "openai";',
    `const client = new OpenAI({ baseURL: "${base}", apiKey: process.env.SVC_API_KEY });`,
    `const r = await client.chat.completions.create({ model: "${model}", messages: [{ role: "user", content: "${content}" }], max_tokens: 64 });`,
    "console.log(r.choices[0].message.content, r.svc_receipt);",
    "",
    "# Python: pip install openai",
    "import os",
    "from openai import OpenAI",
    `client = OpenAI(base_url="${base}", api_key=os.environ["SVC_API_KEY"])`,
    `r = client.chat.completions.create(model="${model}", messages=[{"role": "user", "content": "${content}"}], max_tokens=64)`,
    "print(r.choices[0].message.content, r.svc_receipt)",
  ];
}

/** Lines indented by two spaces, blank ones left blank. */
export const indent = (lines: readonly string[], by = "  "): string[] => lines.map((l) => (l === "" ? "" : `${by}${l}`));
