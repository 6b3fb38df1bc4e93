// Bench section 7, an agent's conversation (issue 30): each turn resends the whole history plus a tool call, its
// result and a user message (about 900 tokens), through the full path (gateway + agent processes, tiny GGUF),
// streamed. Per turn: TTFT, prompt tokens, cached tokens and the hit ratio; with the prompt cache on and off, two
// and four callers interleaved on one provider, and node-llama-cpp's own LlamaChatSession keeping its context; then
// the same on a GGUF whose prompt time splits between weights and attention as Qwen3-8B's does.
import { join } from "node:path";
import { getLlama, LlamaChatSession, type Token } from "node-llama-cpp";
import { defaultThreads } from "../agent/daemon/machine.ts";
import { qwenWrapper } from "../agent/engine/prompt.ts";
import { planTurn, type GenerateRequest } from "../agent/engine/turn.ts";
import { ModelStore } from "../agent/models/store.ts";
import { writeTinyCatalog, type WrittenTinyCatalog } from "../tiny-model/catalog.ts";
import { ANSWER_TOKENS, conversation, LONG_PREFIX, SHORT, TOOLS, type Shape } from "./agent-conversation.ts";
import { LoadClient, type Sample } from "./load.ts";
import { OPERATOR_KEY, startAgent, startGateway } from "./procs.ts";
import { percentile, type Table } from "./stats.ts";

/** The agent's flags in each configuration: the prompt cache at its default, and turned off (`--prompt-cache-gb 0`). */
export const CACHE_CONFIGS = { on: [] as string[], off: ["--prompt-cache-gb", "0"] };

interface Turn {
  ttftMs: number;
  prompt: number;
  cached: number;
}

/** One turn of callers' conversations on one pinned provider, one caller after another. */
async function step(clients: LoadClient[], provider: string, turn: number, shape: Shape): Promise<Turn[]> {
  const out: Turn[] = [];
  for (const [caller, client] of clients.entries()) {
    const body = { messages: conversation(caller, turn, shape), tools: TOOLS, max_tokens: ANSWER_TOKENS, temperature: 0, provider };
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
export async function openAnchor(tiny: WrittenTinyCatalog, shape: Shape = SHORT): Promise<{ turn(turn: number): Promise<Turn>; close(): Promise<void> }> {
  const { path } = await new ModelStore({ catalog: tiny.catalog, modelsDir: tiny.modelsDir }).verify(tiny.catalog.default);
  const llama = await getLlama({ gpu: "auto" });
  const model = await llama.loadModel({ modelPath: path });
  const context = await model.createContext({ contextSize: Math.min(model.trainContextSize, shape.contextSize), threads: defaultThreads(), sequences: 1 });
  const session = new LlamaChatSession({ contextSequence: context.getSequence(), chatWrapper: qwenWrapper() });
  const sequence = session.sequence;
  return {
    async turn(turn) {
      const request = { model: tiny.catalog.default, messages: conversation(0, turn, shape), tools: TOOLS, max_tokens: ANSWER_TOKENS, temperature: 0 };
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
  /** "tiny" (the bench's GGUF), "proportioned" (PROPORTIONED) or "long-prefix" (the tiny GGUF, LONG_PREFIX's opening). */
  model: string;
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

/**
 * The tiny GGUF's shape for section 7's second part: 128 wide, 2 layers, a feed-forward of 16,384. Per token its
 * weight matrices cost 4 × (49 K + 384 × 16,384) ≈ 25 M FLOPs and each query-key pair 1,024 (QK and AV over 128
 * query dims in 2 layers): 4.1e-5 of a token's weight work per pair, where Qwen3-8B's is 590 K / 13.9 G = 4.2e-5. So
 * at any context length attention's share of prompt time is Qwen3-8B's, which the 64-wide tiny model's is not (its
 * prompt time at 8 K is mostly attention).
 */
export const PROPORTIONED = { embedding: 128, feedForward: 16_384 };

interface Config {
  name: string;
  callers: number;
  cache: keyof typeof CACHE_CONFIGS;
}

/** One model's conversations: every configuration and the anchor, interleaved turn by turn, `rounds` times. */
async function scenario(dir: string, tiny: WrittenTinyCatalog, name: string, configs: Config[], turns: number, rounds: number, shape: Shape = SHORT): Promise<AgentRow[]> {
  // each configuration's callers have keys of their own in each round, so none finds another's conversation in
  // the cache (the same key is the same scope: its earlier identical turns would count as hits)
  const keysOf = (c: number, round: number) => Array.from({ length: configs[c]!.callers }, (_, i) => `${OPERATOR_KEY}_${round}_${c}_${i}`);
  const keys = [OPERATOR_KEY, ...Array.from({ length: rounds }, (_, r) => configs.flatMap((_, c) => keysOf(c, r))).flat()];
  const gateway = await startGateway(dir, { catalogPath: tiny.catalogPath, name: `${name}-gateway`, operatorKeys: keys });
  const context = ["--context-size", String(shape.contextSize)];
  const on = await startAgent(dir, `${name}-cache-on`, gateway.coordinatorUrl, tiny, [...CACHE_CONFIGS.on, ...context]);
  const off = await startAgent(dir, `${name}-cache-off`, gateway.coordinatorUrl, tiny, [...CACHE_CONFIGS.off, ...context]);
  const clientOf = (key: string) => new LoadClient({ url: gateway.url, key, model: tiny.catalog.default }, 1);
  const clients: LoadClient[] = [];
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
        return (turn: number) => step(callers, provider, turn, shape);
      });
      const opened = (anchorSide = await openAnchor(tiny, shape));
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
  return names.flatMap((config, s) => {
    const perTurn = perSide[s]!;
    return perTurn.map((samples, i) => {
      const mean = (ts: Turn[], f: (t: Turn) => number) => ts.reduce((sum, t) => sum + f(t), 0) / ts.length;
      const prompt = mean(samples, (t) => t.prompt);
      const cached = mean(samples, (t) => t.cached);
      const previous = i > 0 ? mean(perTurn[i - 1]!, (t) => t.prompt) : Number.NaN;
      const ttftMs = percentile(samples.map((t) => t.ttftMs), 50);
      return { model: name, config, turn: i + 1, ttftMs, prompt, cached, hitRatio: prompt > 0 ? cached / prompt : 0, reuseOfPrevious: cached / previous };
    });
  });
}

export async function agentBench(dir: string, tiny: WrittenTinyCatalog, quick: boolean) {
  const turns = quick ? 3 : 8;
  // the whole conversation again, from a cold cache, with fresh keys: one sample a turn is at the mercy of the box
  const rounds = quick ? 1 : 5;
  const interleaved = quick ? [2] : [2, 4];
  const configs: Config[] = [
    { name: "cache on, 1 caller", callers: 1, cache: "on" },
    { name: "cache off, 1 caller", callers: 1, cache: "off" },
    ...interleaved.map((n) => ({ name: `cache on, ${n} callers interleaved`, callers: n, cache: "on" as const })),
  ];
  const rows = await scenario(dir, tiny, "tiny", configs, turns, rounds);
  // the same conversation on a GGUF with Qwen3-8B's proportions (PROPORTIONED): one caller, the cache on and off
  const shaped = writeTinyCatalog(join(dir, "proportioned"), [{ alias: "tiny-proportioned", seed: 7, endOfTurn: "never", ...PROPORTIONED }], "svc-bench");
  rows.push(...(await scenario(dir, shaped, "proportioned", configs.slice(0, 2), turns, quick ? 1 : 3)));
  // and on the tiny GGUF with a coding agent's long system prompt, in a context that holds its eight turns
  rows.push(...(await scenario(dir, tiny, "long-prefix", configs.slice(0, 2), turns, quick ? 1 : 3, LONG_PREFIX)));
  const parts = [
    {
      model: "tiny",
      title: "7. An agent's conversation: per turn, the prompt cache on and off, callers interleaved, and node-llama-cpp's LlamaChatSession",
      whole: "7b. The whole conversation: TTFT summed over its turns, against the anchor's",
      note:
        `${turns} turns, each adding a tool call, its result and a user message (about 900 tokens), streamed at temperature 0 with max_tokens ${ANSWER_TOKENS}, ` +
        `through HTTP → gateway → agent process (tiny GGUF), pinned to one agent per configuration; callers (one API key each) take turns one after another, and every configuration takes turn t before any takes turn t + 1; ` +
        `${rounds} round${rounds === 1 ? "" : "s"} of the whole conversation (fresh keys, a cold cache); TTFT is the median over callers and rounds, token counts the means. cached tokens: usage.prompt_tokens_details.cached_tokens (0 when absent). ` +
        `cached / prompt is at most (prompt − the turn's ~880 new tokens) / prompt (0.67 on turn 2; 0.83 of turns 2–8's prompt tokens together); ` +
        `cached / previous prompt is the share of the last turn's prompt (what the cache could serve) that was served. ` +
        `The anchor runs in the bench process: LlamaChatSession on one context sequence, given the same conversation (Qwen3's tool wrapper, the history set, the question prompted); ` +
        `its prompt tokens are the context's tokens at its first answer token, and its cached tokens those it kept from the turn before.`,
    },
    {
      model: "proportioned",
      title: `7c. The same conversation on a GGUF with Qwen3-8B's proportions (${PROPORTIONED.embedding} wide, feed-forward ${PROPORTIONED.feedForward.toLocaleString("en-US")})`,
      whole: "7d. The whole conversation (7c's model): TTFT summed over its turns, against the anchor's",
      note: `As 7, one caller, ${quick ? 1 : 3} round${quick ? "" : "s"}. Its weight matrices cost a token about 25 M FLOPs and each query-key pair 1,024, Qwen3-8B's proportion (4.1e-5 against 4.2e-5), so its prompt time is not mostly attention as the 64-wide tiny model's is at 8 K.`,
    },
    {
      model: "long-prefix",
      title: `7e. The same turns after a coding agent's long system prompt (tiny GGUF, --context-size ${LONG_PREFIX.contextSize.toLocaleString("en-US")})`,
      whole: "7f. The whole conversation (7e's): TTFT summed over its turns, against the anchor's",
      note: `As 7, one caller, ${quick ? 1 : 3} round${quick ? "" : "s"}, with ${LONG_PREFIX.manualLines} lines of rules (about 6,000 tokens) in the system prompt, as coding agents send theirs; the agents and the anchor get a ${LONG_PREFIX.contextSize.toLocaleString("en-US")}-token context.`,
    },
  ];
  const perTurn = ({ model, title, note }: (typeof parts)[number]): Table => ({
    title,
    columns: ["configuration", "turn", "TTFT ms", "prompt tokens", "cached tokens", "cached / prompt", "cached / previous prompt"],
    rows: rows.filter((r) => r.model === model).map((r) => [r.config, r.turn, r.ttftMs, Math.round(r.prompt), Math.round(r.cached), r.hitRatio, r.reuseOfPrevious]),
    note,
  });
  return { rows, tables: parts.flatMap((part) => [perTurn(part), conversationTable(rows, part.model, part.whole)]) };
}

/**
 * The whole conversation per configuration, against the anchor: the sum of each turn's median TTFT (what an agent
 * waits for over its eight turns), turn 8 against turn 1, and the reuse over turns 2 to the last.
 */
export function conversationTable(all: AgentRow[], model: string, title: string): Table {
  const rows = all.filter((r) => r.model === model);
  const names = [...new Set(rows.map((r) => r.config))];
  const of = (config: string) => rows.filter((r) => r.config === config);
  const total = (config: string) => of(config).reduce((sum, r) => sum + r.ttftMs, 0);
  const anchor = total(names.at(-1)!);
  return {
    title,
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
