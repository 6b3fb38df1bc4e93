// DESIGN §9 end to end on the tiny model, real processes: a caller's next turn reuses its cached prefix
// (usage.prompt_tokens_details.cached_tokens, signed in the v3 receipt) and answers exactly as a cold run; scopes
// (API key, prompt_cache_key) stay apart; cache_prompt false; an abort; the Responses route and legacy completions;
// eviction at the memory bound and the TTL.
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OPERATOR_KEY, post, startAgent, startGateway, type AgentProcess, type GatewayProcess } from "../fixtures/gateway.ts";
import { readSse } from "../../harness/sse.ts";

const SECOND_KEY = "sk-svc_operator-second-key-9876543210";
/** The bounded agent's TTL (s): long enough for a request to follow another on a loaded machine. */
const TTL_S = 6;
/** The bounded agent's `--context-size`: a quarter of the default. */
const CONTEXT = 2048;

interface Message {
  role: string;
  content: string;
}
interface Answer {
  text: string;
  prompt: number;
  cached: number;
}

let gw: GatewayProcess;
/** An agent that keeps one conversation (a budget below one sequence) for TTL_S seconds, in a context of CONTEXT tokens. */
let bounded: AgentProcess;
beforeAll(async () => {
  gw = await startGateway({ env: { SVC_OPERATOR_KEYS: `${OPERATOR_KEY},${SECOND_KEY}` } });
  bounded = await startAgent(gw.coordinatorUrl, gw.tiny, { args: ["--prompt-cache-gb", "0.000000001", "--prompt-cache-ttl", String(TTL_S), "--context-size", String(CONTEXT)] });
  await gw.waitForLog((l) => l.msg === "agent advertising" && l.provider === bounded.providerId);
});
afterAll(async () => {
  await bounded?.stop();
  await gw?.stop();
});

const system: Message = { role: "system", content: "You are a coding agent. Tools: read_file(path), write_file(path, text), run(cmd). ".repeat(5) };
const opening = (who: string): Message[] => [system, { role: "user", content: `${who}: read config.toml and report the port.` }];
const next = (messages: Message[], answer: string, user: string): Message[] => [...messages, { role: "assistant", content: answer }, { role: "user", content: user }];

/** A non-stream turn pinned to `provider` (default: the gateway's first agent), temperature 0 and a seed. */
async function turn(messages: Message[], extra: Record<string, unknown> = {}, key = OPERATOR_KEY, provider = gw.providerId): Promise<Answer> {
  const res = await post({ url: gw.url, key }, "/v1/chat/completions", { model: "qwen3-4b", messages, max_tokens: 16, temperature: 0, seed: 3, provider, ...extra });
  expect(res.status).toBe(200);
  const body = (await res.json()) as {
    choices: { message: { content: string } }[];
    usage: { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } };
    svc_receipt: { version: number; cached_tokens: number };
  };
  // copied from the signed receipt, which the gateway verified
  expect(body.svc_receipt.version).toBe(3);
  expect(body.usage.prompt_tokens_details.cached_tokens).toBe(body.svc_receipt.cached_tokens);
  return { text: body.choices[0]!.message.content, prompt: body.usage.prompt_tokens, cached: body.usage.prompt_tokens_details.cached_tokens };
}

describe("DESIGN §9 a caller's next turn", () => {
  it("reuses the shared prefix, answers with the cold run's tokens, and says so on a stream's usage chunk too", async () => {
    const first = opening("alice");
    const one = await turn(first);
    expect(one.cached).toBe(0);
    const second = next(first, one.text, "Change it to 8080.");
    const cold = await turn(second, { cache_prompt: false });
    expect(cold.cached).toBe(0);
    const res = await post(gw, "/v1/chat/completions", { model: "qwen3-4b", messages: second, max_tokens: 16, temperature: 0, seed: 3, provider: gw.providerId, stream: true });
    const { data } = await readSse(res);
    const chunks = data.slice(0, -1).map((d) => JSON.parse(d) as Record<string, any>); // eslint-disable-line @typescript-eslint/no-explicit-any -- chunk fields are read one by one
    const stop = chunks.at(-1)!;
    const text = chunks.slice(1, -1).map((c) => c.choices[0].delta.content as string).join("");
    expect(text).toBe(cold.text);
    expect(stop.usage.prompt_tokens).toBe(cold.prompt);
    expect(stop.usage.prompt_tokens_details.cached_tokens).toBe(stop.svc_receipt.cached_tokens);
    expect(stop.usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(system.content.length);
    expect(stop.usage.prompt_tokens_details.cached_tokens).toBeLessThan(cold.prompt);
  });

  it("scopes stay apart: another API key, or another prompt_cache_key under one key, starts cold on the same prefix", async () => {
    const messages = opening("bob");
    await turn(messages);
    expect((await turn(messages)).cached).toBeGreaterThan(0);
    expect((await turn(messages, {}, SECOND_KEY)).cached).toBe(0);
    expect((await turn(messages, { prompt_cache_key: "bob-2" })).cached).toBe(0);
    // and each of those is now its own scope's
    expect((await turn(messages, { prompt_cache_key: "bob-2" })).cached).toBeGreaterThan(0);
  });

  it("cache_prompt false reuses nothing and keeps nothing", async () => {
    const messages = opening("carol");
    await turn(messages, { prompt_cache_key: "carol" });
    expect((await turn(messages, { prompt_cache_key: "carol", cache_prompt: false })).cached).toBe(0);
    expect((await turn(messages, { prompt_cache_key: "carol" })).cached).toBeGreaterThan(0);
    await turn(messages, { prompt_cache_key: "carol-private", cache_prompt: false });
    expect((await turn(messages, { prompt_cache_key: "carol-private" })).cached).toBe(0);
  });

  it("a turn aborted mid-stream, then the same turn: a hit on the earlier prefix, with the cold run's tokens", async () => {
    const first = opening("dave");
    const one = await turn(first);
    const second = next(first, one.text, "And the host?");
    const cold = await turn(second, { cache_prompt: false });
    const controller = new AbortController();
    const res = await post(gw, "/v1/chat/completions", { model: "qwen3-4b", messages: second, max_tokens: 400, temperature: 0, seed: 3, provider: gw.providerId, stream: true }, { signal: controller.signal });
    const reader = res.body!.getReader();
    await reader.read(); // the role chunk, then tokens
    await reader.read();
    controller.abort();
    const hit = await turn(second);
    expect(hit.text).toBe(cold.text);
    expect(hit.cached).toBeGreaterThan(system.content.length);
  });

  it("four callers interleaved on one provider, some concurrent and queued: every answer is the cold run's", async () => {
    // fresh scopes (the keys' own were used above); one prompt_cache_key under two keys is two scopes
    const callers = [
      { key: OPERATOR_KEY, extra: { prompt_cache_key: "four" } },
      { key: OPERATOR_KEY, extra: { prompt_cache_key: "four-b" } },
      { key: SECOND_KEY, extra: { prompt_cache_key: "four" } },
      { key: SECOND_KEY, extra: { prompt_cache_key: "four-b" } },
    ];
    const users = ["Open main.ts.", "Rename run to start.", "Now run the tests."];
    // the cold runs, one after another: each caller's conversation, every turn read afresh
    const conversations = callers.map((_, i) => [opening(`caller ${i}`)]);
    const coldAnswers: string[][] = callers.map(() => []);
    for (const [i, caller] of callers.entries()) {
      for (const [t, user] of users.entries()) {
        const answer = await turn(conversations[i]![t]!, { ...caller.extra, cache_prompt: false }, caller.key);
        coldAnswers[i]!.push(answer.text);
        conversations[i]!.push(next(conversations[i]![t]!, answer.text, user));
      }
    }
    // the same turns through the cache: each round's four requests at once (one runs, three queue), then in turn
    const cached: number[][] = callers.map(() => []);
    for (let t = 0; t < users.length; t++) {
      const round = async (i: number) => {
        const answer = await turn(conversations[i]![t]!, callers[i]!.extra, callers[i]!.key);
        expect(answer.text, `caller ${i} turn ${t}`).toBe(coldAnswers[i]![t]);
        cached[i]!.push(answer.cached);
      };
      if (t % 2 === 0) await Promise.all(callers.map((_, i) => round(i)));
      else for (let i = 0; i < callers.length; i++) await round(i);
    }
    for (const [i, counts] of cached.entries()) {
      expect(counts[0], `caller ${i} turn 0`).toBe(0);
      for (const later of counts.slice(1)) expect(later, `caller ${i}`).toBeGreaterThan(system.content.length);
    }
  });
});

describe("Issue 41 each API key gets a fair share of a provider's cache", () => {
  it("another key's 16 prompt_cache_keys evict only its own conversations: the first key's next turn is still a hit", async () => {
    const first = opening("victor");
    const one = await turn(first);
    // more scopes than the provider keeps conversations (8 at most): under plain LRU the first key's was gone
    for (let i = 0; i < 16; i++) await turn(opening(`mallory-${i}`), { prompt_cache_key: `flood-${i}` }, SECOND_KEY);
    const two = await turn(next(first, one.text, "Change it to 8080."));
    expect(two.cached).toBeGreaterThan(system.content.length);
  });
});

describe("DESIGN §9 on the Responses route and legacy completions: the same scope, the same report", () => {
  interface Reported {
    cached: number;
    text: string;
  }
  /** A pinned request to `path` at temperature 0 with a seed: what its `usage` reports as cached, checked against
   * the signed receipt, and the answer's text, as `read` finds them. */
  async function ask(path: string, body: Record<string, unknown>, key: string, read: (answer: Record<string, unknown>) => Reported): Promise<Reported> {
    const res = await post({ url: gw.url, key }, path, { model: "qwen3-4b", temperature: 0, seed: 3, provider: gw.providerId, ...body });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as Record<string, unknown> & { svc_receipt: { cached_tokens: number } };
    const reported = read(answer);
    expect(reported.cached).toBe(answer.svc_receipt.cached_tokens);
    return reported;
  }

  type Send = (extra: Record<string, unknown>, key?: string) => Promise<Reported>;
  /** What chat's tests above show, through `send`: a first turn is cold and the same turn again a hit with the cold
   * run's answer; another prompt_cache_key or another key starts cold; cache_prompt false reuses and keeps nothing. */
  async function keepsChatsRules(send: Send, name: string): Promise<void> {
    const cold = await send({ prompt_cache_key: name, cache_prompt: false });
    expect(cold.cached).toBe(0);
    expect((await send({ prompt_cache_key: name })).cached).toBe(0);
    const hit = await send({ prompt_cache_key: name });
    expect(hit.cached).toBeGreaterThan(system.content.length);
    expect(hit.text).toBe(cold.text);
    expect((await send({ prompt_cache_key: `${name}-2` })).cached).toBe(0);
    expect((await send({ prompt_cache_key: name }, SECOND_KEY)).cached).toBe(0);
    expect((await send({ prompt_cache_key: name, cache_prompt: false })).cached).toBe(0);
    // cache_prompt false left the scope's conversation as it was
    expect((await send({ prompt_cache_key: name })).cached).toBeGreaterThan(system.content.length);
  }

  it("POST /v1/responses reports a hit as usage.input_tokens_details.cached_tokens, scoped and answered as chat's", async () => {
    type Response = { usage: { input_tokens_details: { cached_tokens: number } }; output: { content?: unknown }[] };
    const respond: Send = (extra, key = OPERATOR_KEY) =>
      ask("/v1/responses", { instructions: system.content, input: "grace: read config.toml.", max_output_tokens: 16, ...extra }, key, (answer) => {
        const response = answer as unknown as Response;
        return { cached: response.usage.input_tokens_details.cached_tokens, text: JSON.stringify(response.output.map((item) => item.content)) };
      });
    await keepsChatsRules(respond, "grace");
  });

  it("POST /v1/completions caches a raw prompt under the caller's scope, reported as chat's", async () => {
    type Completion = { usage: { prompt_tokens_details: { cached_tokens: number } }; choices: { text: string }[] };
    const complete: Send = (extra, key = OPERATOR_KEY) =>
      ask("/v1/completions", { prompt: `${system.content}\nheidi: read config.toml.`, max_tokens: 16, ...extra }, key, (answer) => {
        const completion = answer as unknown as Completion;
        return { cached: completion.usage.prompt_tokens_details.cached_tokens, text: completion.choices[0]!.text };
      });
    await keepsChatsRules(complete, "heidi");
  });
});

describe("DESIGN §9 bounds, on an agent given --prompt-cache-gb 0.000000001 --prompt-cache-ttl 6 --context-size 2048", () => {
  const on = (messages: Message[], extra: Record<string, unknown> = {}) => turn(messages, extra, OPERATOR_KEY, bounded.providerId);

  it("a budget below one sequence keeps one conversation: a second scope evicts the first", async () => {
    const messages = opening("erin");
    await on(messages, { prompt_cache_key: "erin-1" });
    expect((await on(messages, { prompt_cache_key: "erin-1" })).cached).toBeGreaterThan(0);
    await on(messages, { prompt_cache_key: "erin-2" });
    expect((await on(messages, { prompt_cache_key: "erin-1" })).cached).toBe(0);
  });

  it("--context-size bounds a session: a prompt past it is the SPEC's 400 context_length_exceeded, which the default agent serves", async () => {
    // about 3,000 tokens (the tiny model's tokenizer is byte-level): past 2,048, well within the default 8,192
    const long: Message[] = [{ role: "user", content: "Read the logs again. ".repeat(150) }];
    const refused = await post({ url: gw.url, key: OPERATOR_KEY }, "/v1/chat/completions", { model: "qwen3-4b", messages: long, max_tokens: 4, provider: bounded.providerId });
    expect(refused.status).toBe(400);
    const { error } = (await refused.json()) as { error: { code: string; param: string; message: string } };
    expect([error.code, error.param]).toEqual(["context_length_exceeded", "messages"]);
    // the gateway's own words, never the provider's (DESIGN §8)
    expect(error.message).toBe(`The prompt and its answer do not fit the model's context on provider ${bounded.providerId}; shorten the messages or lower max_tokens.`);
    expect((await turn(long, { max_tokens: 4 })).prompt).toBeGreaterThan(CONTEXT);
  });

  it("a conversation is gone once its TTL has passed", async () => {
    const messages = opening("frank");
    await on(messages);
    expect((await on(messages)).cached).toBeGreaterThan(0);
    await sleep(TTL_S * 1000 + 1000);
    expect((await on(messages)).cached).toBe(0);
  });
});
