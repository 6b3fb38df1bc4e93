// Bench section 7, an agent's conversation (issue 30): each turn resends the whole history plus a tool call, its
// result and a user message (about 900 tokens), through the full path (gateway + agent processes, tiny GGUF),
// streamed. Per turn: TTFT, prompt tokens, cached tokens and the hit ratio; with the prompt cache on and off, two
// and four callers interleaved on one provider, and node-llama-cpp's own LlamaChatSession keeping its context.
import { getLlama, LlamaChatSession, resolveChatWrapper } from "node-llama-cpp";
import { DEFAULT_CONTEXT_SIZE } from "../agent/engine/engine.ts";
import { defaultThreads } from "../agent/daemon/machine.ts";
import { ModelStore } from "../agent/models/store.ts";
import type { WrittenTinyCatalog } from "../tiny-model/catalog.ts";
import { LoadClient, type Sample } from "./load.ts";
import { OPERATOR_KEY, startAgent, startGateway } from "./procs.ts";
import type { Table } from "./stats.ts";

/** The agent's flags in each configuration: the prompt cache at its default, and turned off (`--prompt-cache-gb 0`). */
export const CACHE_CONFIGS = { on: [] as string[], off: ["--prompt-cache-gb", "0"] };

const ANSWER_TOKENS = 8;
/**
 * Lines of about 70 tokens (the tiny model's tokenizer is byte-level: a token a character): with the call's
 * markup, about 880 tokens a turn, so turn 8 (about 7,950 with the tool definitions) still fits the engine's
 * 8,192-token context.
 */
const TOOL_LINES = 8;
const USER_LINES = 2;

type Message = Record<string, unknown>;

/** Deterministic text that differs per caller, turn and line, so no two callers or turns share more than markup. */
const line = (caller: number, turn: number, i: number) =>
  `Reading ${turn}.${i} for caller ${caller}: gauge ${(caller * 7919 + turn * 104729 + i * 31) % 997} shows ${(i * 13 + turn) % 89} units, logged at ${10 + (i % 12)}:${String((i * 7) % 60).padStart(2, "0")}.`;
const block = (caller: number, turn: number, lines: number, offset = 0) =>
  Array.from({ length: lines }, (_, i) => line(caller, turn, i + offset)).join("\n");

const TOOLS = [
  {
    type: "function",
    function: {
      name: "read_gauges",
      description: "Reads the station's gauges for a time window and returns one line per reading.",
      parameters: { type: "object", properties: { station: { type: "string" }, window_minutes: { type: "integer" } }, required: ["station"] },
    },
  },
];

/** The messages a caller sends on turn `turn` (1-based): the history so far, then this turn's call, result and question. */
function conversation(caller: number, turn: number): Message[] {
  const messages: Message[] = [
    { role: "system", content: `You are a station assistant for caller ${caller}. Use read_gauges to read the gauges before you answer.` },
    { role: "user", content: `Start of shift.\n${block(caller, 0, 1)}` },
  ];
  for (let t = 1; t <= turn; t++) {
    const id = `call_${caller}_${t}`;
    messages.push({ role: "assistant", content: null, tool_calls: [{ id, type: "function", function: { name: "read_gauges", arguments: JSON.stringify({ station: `st-${caller}`, window_minutes: 10 * t }) } }] });
    messages.push({ role: "tool", tool_call_id: id, content: block(caller, t, TOOL_LINES) });
    messages.push({ role: "user", content: `Turn ${t}: what changed?\n${block(caller, t, USER_LINES, TOOL_LINES)}` });
  }
  return messages;
}

interface Turn {
  ttftMs: number;
  prompt: number;
  cached: number;
}

/** Callers' conversations on one pinned provider, turn by turn, one caller after another (round robin). */
async function converse(clients: LoadClient[], provider: string, turns: number): Promise<Turn[][]> {
  const perTurn: Turn[][] = Array.from({ length: turns }, () => []);
  for (let turn = 1; turn <= turns; turn++) {
    for (const [caller, client] of clients.entries()) {
      const body = { messages: conversation(caller, turn), tools: TOOLS, max_tokens: ANSWER_TOKENS, temperature: 0, provider };
      const sample: Sample = await client.chat(body, true, (why) => console.error(`agent: ${why}`));
      if (!sample.ok) throw new Error(`agent section: turn ${turn} of caller ${caller} failed`);
      perTurn[turn - 1]!.push({ ttftMs: sample.ttftMs ?? Number.NaN, prompt: sample.usage?.prompt_tokens ?? 0, cached: sample.usage?.prompt_tokens_details?.cached_tokens ?? 0 });
    }
  }
  return perTurn;
}

/** node-llama-cpp's LlamaChatSession on the same GGUF, threads and context size: each turn's text as one prompt. */
async function anchor(tiny: WrittenTinyCatalog, turns: number): Promise<Turn[]> {
  const { path } = await new ModelStore({ catalog: tiny.catalog, modelsDir: tiny.modelsDir }).verify(tiny.catalog.default);
  const llama = await getLlama({ gpu: "auto" });
  const model = await llama.loadModel({ modelPath: path });
  try {
    const context = await model.createContext({ contextSize: Math.min(model.trainContextSize, DEFAULT_CONTEXT_SIZE), threads: defaultThreads(), sequences: 1 });
    // the tool definitions ride in the system prompt (without Qwen3's tool instructions: about 400 tokens fewer than svc's turn 1)
    const systemPrompt = `${conversation(0, 0)[0]!.content as string}\nTools: ${JSON.stringify(TOOLS)}`;
    const session = new LlamaChatSession({ contextSequence: context.getSequence(), chatWrapper: resolveChatWrapper(model), systemPrompt });
    const sequence = session.sequence;
    const out: Turn[] = [];
    for (let turn = 1; turn <= turns; turn++) {
      const [call, result, question] = conversation(0, turn).slice(-3) as [Message, Message, Message];
      // turn 1 also carries the opening user message; every turn its call, result and question, as one prompt
      const text = [turn === 1 ? conversation(0, 0)[1]!.content : "", JSON.stringify(call.tool_calls), result.content, question.content].filter(Boolean).join("\n");
      const before = [...sequence.contextTokens];
      const started = performance.now();
      let ttftMs = Number.NaN;
      let answer = 0;
      await session.prompt(text, {
        maxTokens: ANSWER_TOKENS,
        temperature: 0,
        onToken: (tokens) => {
          if (answer === 0) ttftMs = performance.now() - started;
          answer += tokens.length;
        },
      });
      const after = sequence.contextTokens;
      let kept = 0;
      while (kept < before.length && kept < after.length && before[kept] === after[kept]) kept++;
      out.push({ ttftMs, prompt: after.length - answer, cached: kept });
    }
    await context.dispose();
    return out;
  } finally {
    await model.dispose();
    await llama.dispose();
  }
}

export interface AgentRow {
  config: string;
  turn: number;
  ttftMs: number;
  prompt: number;
  cached: number;
  hitRatio: number;
}

export async function agentBench(dir: string, tiny: WrittenTinyCatalog, quick: boolean) {
  const turns = quick ? 3 : 8;
  const interleaved = quick ? [2] : [2, 4];
  // each configuration's callers have keys of their own, so no configuration finds another's conversation in
  // the cache (the same key is the same scope: its earlier identical turns would count as hits)
  const configs = [
    { name: "cache on, 1 caller", callers: 1, cache: "on" as const },
    { name: "cache off, 1 caller", callers: 1, cache: "off" as const },
    ...interleaved.map((n) => ({ name: `cache on, ${n} callers interleaved`, callers: n, cache: "on" as const })),
  ];
  const keysOf = (c: number) => Array.from({ length: configs[c]!.callers }, (_, i) => `${OPERATOR_KEY}_${c}_${i}`);
  const keys = [OPERATOR_KEY, ...configs.flatMap((_, c) => keysOf(c))];
  const gateway = await startGateway(dir, { catalogPath: tiny.catalogPath, name: "agent-gateway", operatorKeys: keys });
  const on = await startAgent(dir, "agent-cache-on", gateway.coordinatorUrl, tiny, CACHE_CONFIGS.on);
  const off = await startAgent(dir, "agent-cache-off", gateway.coordinatorUrl, tiny, CACHE_CONFIGS.off);
  const clientOf = (key: string) => new LoadClient({ url: gateway.url, key, model: tiny.catalog.default }, 1);
  const clients: LoadClient[] = [];
  const rows: AgentRow[] = [];
  const add = (config: string, perTurn: Turn[][]) =>
    perTurn.forEach((callers, i) => {
      const mean = (f: (t: Turn) => number) => callers.reduce((sum, t) => sum + f(t), 0) / callers.length;
      const prompt = mean((t) => t.prompt);
      const cached = mean((t) => t.cached);
      rows.push({ config, turn: i + 1, ttftMs: mean((t) => t.ttftMs), prompt, cached, hitRatio: prompt > 0 ? cached / prompt : 0 });
    });
  try {
    // each agent loads the model first, so turn 1 times the turn and not the load
    const warm = clientOf(OPERATOR_KEY);
    clients.push(warm);
    for (const agent of [on, off]) await warm.chat({ messages: [{ role: "user", content: "warm up" }], max_tokens: 1, provider: agent.id }, false);
    for (const [c, config] of configs.entries()) {
      const callers = keysOf(c).map(clientOf);
      clients.push(...callers);
      add(config.name, await converse(callers, (config.cache === "on" ? on : off).id, turns));
    }
  } finally {
    for (const c of clients) c.close();
    await on.proc.stop();
    await off.proc.stop();
    await gateway.proc.stop();
  }
  add("LlamaChatSession (anchor)", (await anchor(tiny, turns)).map((t) => [t]));
  const table: Table = {
    title: "7. An agent's conversation: per turn, the prompt cache on and off, callers interleaved, and node-llama-cpp's LlamaChatSession",
    columns: ["configuration", "turn", "TTFT ms", "prompt tokens", "cached tokens", "hit ratio"],
    rows: rows.map((r) => [r.config, r.turn, r.ttftMs, Math.round(r.prompt), Math.round(r.cached), r.hitRatio]),
    note:
      `${turns} turns, each adding a tool call, its result and a user message (about 900 tokens), streamed at temperature 0 with max_tokens ${ANSWER_TOKENS}, ` +
      `through HTTP → gateway → agent process (tiny GGUF), pinned to one agent per configuration; callers (one API key each) take turns one after another, ` +
      `and their rows are means over callers. cached tokens: usage.prompt_tokens_details.cached_tokens (0 when absent). ` +
      `The anchor runs in the bench process: LlamaChatSession on one context sequence, each turn's call, result and question as one prompt; ` +
      `its prompt tokens are the context's tokens after the turn and its cached tokens those it kept from the turn before.`,
  };
  return { rows, tables: [table] };
}
