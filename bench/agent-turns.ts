// Bench section 7, an agent's conversation (issue 30): each turn resends the whole history plus a tool call, its
// result and a user message (about 900 tokens), through the full path (gateway + agent processes, tiny GGUF),
// streamed. Per turn: TTFT, prompt tokens, cached tokens and the hit ratio; with the prompt cache on and off, two
// and four callers interleaved on one provider, and node-llama-cpp's own LlamaChatSession keeping its context.
import { getLlama, LlamaChatSession, type Token } from "node-llama-cpp";
import { DEFAULT_CONTEXT_SIZE } from "../agent/engine/engine.ts";
import { defaultThreads } from "../agent/daemon/machine.ts";
import { qwenWrapper } from "../agent/engine/prompt.ts";
import { planTurn, type GenerateRequest } from "../agent/engine/turn.ts";
import { ModelStore } from "../agent/models/store.ts";
import type { WrittenTinyCatalog } from "../tiny-model/catalog.ts";
import { LoadClient, type Sample } from "./load.ts";
import { OPERATOR_KEY, startAgent, startGateway } from "./procs.ts";
import { percentile, type Table } from "./stats.ts";

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

export const TOOLS = [
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
export function conversation(caller: number, turn: number): Message[] {
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

/** One turn of callers' conversations on one pinned provider, one caller after another. */
async function step(clients: LoadClient[], provider: string, turn: number): Promise<Turn[]> {
  const out: Turn[] = [];
  for (const [caller, client] of clients.entries()) {
    const body = { messages: conversation(caller, turn), tools: TOOLS, max_tokens: ANSWER_TOKENS, temperature: 0, provider };
    const sample: Sample = await client.chat(body, true, (why) => console.error(`agent: ${why}`));
    if (!sample.ok) throw new Error(`agent section: turn ${turn} of caller ${caller} failed`);
    out.push({ ttftMs: sample.ttftMs ?? Number.NaN, prompt: sample.usage?.prompt_tokens ?? 0, cached: sample.usage?.prompt_tokens_details?.cached_tokens ?? 0 });
  }
  return out;
}

/**
 * node-llama-cpp's LlamaChatSession on the same GGUF, threads and context size, given the same conversation svc
 * renders: Qwen3's chat wrapper as the agent sets it up, the history up to this turn's question (the tool call and
 * its result included) set on the session, then the question prompted with the same tools. Its prompt tokens are
 * svc's, token for token; it keeps its context sequence between turns and reuses the common prefix itself.
 */
export async function openAnchor(tiny: WrittenTinyCatalog): Promise<{ turn(turn: number): Promise<Turn>; close(): Promise<void> }> {
  const { path } = await new ModelStore({ catalog: tiny.catalog, modelsDir: tiny.modelsDir }).verify(tiny.catalog.default);
  const llama = await getLlama({ gpu: "auto" });
  const model = await llama.loadModel({ modelPath: path });
  const context = await model.createContext({ contextSize: Math.min(model.trainContextSize, DEFAULT_CONTEXT_SIZE), threads: defaultThreads(), sequences: 1 });
  const session = new LlamaChatSession({ contextSequence: context.getSequence(), chatWrapper: qwenWrapper() });
  const sequence = session.sequence;
  return {
    async turn(turn) {
      const request = { model: tiny.catalog.default, messages: conversation(0, turn), tools: TOOLS, max_tokens: ANSWER_TOKENS, temperature: 0 };
      const plan = planTurn(request as unknown as GenerateRequest).prompt;
      if (plan.form !== "qwen") throw new Error("agent section: the anchor expects Qwen3's tool form");
      // the history ends with this turn's question and the empty model turn the answer goes into
      const question = plan.history.at(-2)!;
      if (question.type !== "user") throw new Error("agent section: the turn must end with a user message");
      session.setChatHistory(plan.history.slice(0, -2));
      const before = [...sequence.contextTokens];
      const started = performance.now();
      let ttftMs = Number.NaN;
      // at the first answer token the context holds the whole prompt and nothing of the answer yet
      let prompt: Token[] = [];
      await session.prompt(question.text, {
        maxTokens: ANSWER_TOKENS,
        temperature: 0,
        // the same definitions svc renders; a handler is what LlamaChatSession requires of a function it offers
        ...(plan.functions ? { functions: Object.fromEntries(Object.entries(plan.functions).map(([name, f]) => [name, { ...f, handler: () => "ok" }])) } : {}),
        onToken: () => {
          if (prompt.length > 0) return;
          ttftMs = performance.now() - started;
          prompt = [...sequence.contextTokens];
        },
      });
      let kept = 0;
      while (kept < before.length && kept < prompt.length && before[kept] === prompt[kept]) kept++;
      return { ttftMs, prompt: prompt.length, cached: kept };
    },
    async close() {
      await context.dispose();
      await model.dispose();
      await llama.dispose();
    },
  };
}

export interface AgentRow {
  config: string;
  turn: number;
  ttftMs: number;
  prompt: number;
  cached: number;
  /** cached / prompt: the share of the whole prompt not re-read (at most (prompt − new tokens) / prompt). */
  hitRatio: number;
  /**
   * cached / the previous turn's prompt: how much of what the cache could have served it did serve (the previous
   * turn's answer is not counted, as the caller sends its tool call in the answer's place); NaN on turn 1.
   */
  reuseOfPrevious: number;
}

export async function agentBench(dir: string, tiny: WrittenTinyCatalog, quick: boolean) {
  const turns = quick ? 3 : 8;
  // the whole conversation again, from a cold cache, with fresh keys: one sample a turn is at the mercy of the box
  const rounds = quick ? 1 : 5;
  const interleaved = quick ? [2] : [2, 4];
  // each configuration's callers have keys of their own in each round, so none finds another's conversation in
  // the cache (the same key is the same scope: its earlier identical turns would count as hits)
  const configs = [
    { name: "cache on, 1 caller", callers: 1, cache: "on" as const },
    { name: "cache off, 1 caller", callers: 1, cache: "off" as const },
    ...interleaved.map((n) => ({ name: `cache on, ${n} callers interleaved`, callers: n, cache: "on" as const })),
  ];
  const keysOf = (c: number, round: number) => Array.from({ length: configs[c]!.callers }, (_, i) => `${OPERATOR_KEY}_${round}_${c}_${i}`);
  const keys = [OPERATOR_KEY, ...Array.from({ length: rounds }, (_, r) => configs.flatMap((_, c) => keysOf(c, r))).flat()];
  const gateway = await startGateway(dir, { catalogPath: tiny.catalogPath, name: "agent-gateway", operatorKeys: keys });
  const on = await startAgent(dir, "agent-cache-on", gateway.coordinatorUrl, tiny, CACHE_CONFIGS.on);
  const off = await startAgent(dir, "agent-cache-off", gateway.coordinatorUrl, tiny, CACHE_CONFIGS.off);
  const clientOf = (key: string) => new LoadClient({ url: gateway.url, key, model: tiny.catalog.default }, 1);
  const clients: LoadClient[] = [];
  const rows: AgentRow[] = [];
  const names = [...configs.map((c) => c.name), "LlamaChatSession (anchor)"];
  // per side, per turn: every caller's turn in every round
  const perSide: Turn[][][] = names.map(() => Array.from({ length: turns }, () => []));
  let anchorSide: Awaited<ReturnType<typeof openAnchor>> | undefined;
  try {
    // each agent loads the model and compiles the tools' grammar first (once per agent, kept for every caller),
    // so turn 1 times the turn and not the load
    const warm = clientOf(OPERATOR_KEY);
    clients.push(warm);
    for (const agent of [on, off]) await warm.chat({ messages: [{ role: "user", content: "warm up" }], tools: TOOLS, max_tokens: 1, provider: agent.id }, false);
    for (let round = 0; round < rounds; round++) {
      const sides = configs.map((config, c) => {
        const callers = keysOf(c, round).map(clientOf);
        clients.push(...callers);
        const provider = (config.cache === "on" ? on : off).id;
        return (turn: number) => step(callers, provider, turn);
      });
      const opened = (anchorSide = await openAnchor(tiny));
      sides.push(async (turn) => [await opened.turn(turn)]);
      // every side takes its turn t before any takes turn t + 1, the first side rotating, so the box's drift
      // over the run falls on all sides alike
      for (let turn = 1; turn <= turns; turn++) {
        for (let k = 0; k < sides.length; k++) {
          const i = (turn - 1 + k + round) % sides.length;
          perSide[i]![turn - 1]!.push(...(await sides[i]!(turn)));
        }
      }
      anchorSide = undefined;
      await opened.close();
    }
  } finally {
    for (const c of clients) c.close();
    await anchorSide?.close();
    await on.proc.stop();
    await off.proc.stop();
    await gateway.proc.stop();
  }
  names.forEach((config, s) => {
    const perTurn = perSide[s]!;
    perTurn.forEach((samples, i) => {
      const mean = (ts: Turn[], f: (t: Turn) => number) => ts.reduce((sum, t) => sum + f(t), 0) / ts.length;
      const prompt = mean(samples, (t) => t.prompt);
      const cached = mean(samples, (t) => t.cached);
      const previous = i > 0 ? mean(perTurn[i - 1]!, (t) => t.prompt) : Number.NaN;
      const ttftMs = percentile(samples.map((t) => t.ttftMs), 50);
      rows.push({ config, turn: i + 1, ttftMs, prompt, cached, hitRatio: prompt > 0 ? cached / prompt : 0, reuseOfPrevious: cached / previous });
    });
  });
  const table: Table = {
    title: "7. An agent's conversation: per turn, the prompt cache on and off, callers interleaved, and node-llama-cpp's LlamaChatSession",
    columns: ["configuration", "turn", "TTFT ms", "prompt tokens", "cached tokens", "cached / prompt", "cached / previous prompt"],
    rows: rows.map((r) => [r.config, r.turn, r.ttftMs, Math.round(r.prompt), Math.round(r.cached), r.hitRatio, r.reuseOfPrevious]),
    note:
      `${turns} turns, each adding a tool call, its result and a user message (about 900 tokens), streamed at temperature 0 with max_tokens ${ANSWER_TOKENS}, ` +
      `through HTTP → gateway → agent process (tiny GGUF), pinned to one agent per configuration; callers (one API key each) take turns one after another, and every configuration takes turn t before any takes turn t + 1; ` +
      `${rounds} round${rounds === 1 ? "" : "s"} of the whole conversation (fresh keys, a cold cache); TTFT is the median over callers and rounds, token counts the means. cached tokens: usage.prompt_tokens_details.cached_tokens (0 when absent). ` +
      `cached / prompt is at most (prompt − the turn's ~880 new tokens) / prompt (0.67 on turn 2, 0.81 over turns 2–8); ` +
      `cached / previous prompt is the share of the last turn's prompt (what the cache could serve) that was served. ` +
      `The anchor runs in the bench process: LlamaChatSession on one context sequence, given the same conversation (Qwen3's tool wrapper, the history set, the question prompted); ` +
      `its prompt tokens are the context's tokens at its first answer token, and its cached tokens those it kept from the turn before.`,
  };
  return { rows, tables: [table, conversationTable(rows, names)] };
}

/**
 * The whole conversation per configuration, against the anchor: the sum of each turn's median TTFT (what an agent
 * waits for over its eight turns), turn 8 against turn 1, and the reuse over turns 2 to the last.
 */
export function conversationTable(rows: AgentRow[], names: string[]): Table {
  const of = (config: string) => rows.filter((r) => r.config === config);
  const total = (config: string) => of(config).reduce((sum, r) => sum + r.ttftMs, 0);
  const anchor = total(names.at(-1)!);
  return {
    title: "7b. The whole conversation: TTFT summed over its turns, against the anchor's",
    columns: ["configuration", "TTFT, all turns ms", "/ anchor", "last turn / turn 1", "cached / prompt, turns 2 on", "cached / previous prompt, turns 2 on"],
    rows: names.map((config) => {
      const turns = of(config);
      const later = turns.slice(1);
      const sum = (f: (r: AgentRow) => number) => later.reduce((s, r) => s + f(r), 0);
      return [config, total(config), total(config) / anchor, turns.at(-1)!.ttftMs / turns[0]!.ttftMs, sum((r) => r.cached) / sum((r) => r.prompt), sum((r) => r.cached) / later.reduce((s, r, i) => s + turns[i]!.prompt, 0)];
    }),
    note: "TTFT per turn is the median over callers and rounds, as above; the sum is what one caller waits before the first text of each of its turns.",
  };
}
