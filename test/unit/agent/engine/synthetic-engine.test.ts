// The bench's synthetic engine (agent/engine/synthetic-engine.ts) honours top_logprobs as a model does (issue 43):
// a complete request (an auditing gateway's, the blind client's) asks for them on every request, and a v4 receipt
// must cover one entry per token.
import { describe, expect, it } from "vitest";
import { SyntheticEngine } from "../../../../agent/engine/synthetic-engine.ts";
import type { GenerateEvent } from "../../../../agent/engine/inference.ts";
import type { Turn } from "../../../../agent/engine/turn.ts";

const engine = new SyntheticEngine({ tokens: 3, tokenMs: 0, sha256Of: () => "0".repeat(64) });
async function events(top_logprobs?: number): Promise<GenerateEvent[]> {
  const request = { model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 3, ...(top_logprobs === undefined ? {} : { top_logprobs }) };
  const out: GenerateEvent[] = [];
  for await (const event of engine.generate({ request } as unknown as Turn)) out.push(event);
  return out;
}

describe("Synthetic engine: logprobs as asked", () => {
  it("top_logprobs 2: each token's entry just before its text, with two alternatives, the chosen one first", async () => {
    const got = await events(2);
    expect(got.map((e) => e.type)).toEqual(["logprobs", "delta", "logprobs", "delta", "logprobs", "delta", "done"]);
    const entries = got.flatMap((e) => (e.type === "logprobs" ? e.logprobs : []));
    expect(entries.map((e) => e.token)).toEqual(["lorem", " ipsum", " dolor"]);
    expect(entries.every((e) => e.logprob === 0 && e.top_logprobs.length === 2 && e.top_logprobs[0]!.token === e.token)).toBe(true);
  });

  it("top_logprobs 0 (a complete request): an entry per token, no alternatives; none asked: no entries", async () => {
    expect((await events(0)).filter((e) => e.type === "logprobs").map((e) => (e.type === "logprobs" ? e.logprobs[0]!.top_logprobs : undefined))).toEqual([[], [], []]);
    expect((await events()).some((e) => e.type === "logprobs")).toBe(false);
  });
});
