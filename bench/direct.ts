// The direct path: the same request run on an engine in this process, with no gateway, coordinator, sealing
// or receipt, timed the way the load generator times the gateway path.
import type { InferenceEngine } from "../agent/engine/inference.ts";
import { planTurn, type GenerateRequest } from "../agent/engine/turn.ts";
import type { Sample } from "./load.ts";

export async function directSample(engine: InferenceEngine, request: GenerateRequest): Promise<Sample> {
  const started = performance.now();
  let ttftMs: number | undefined;
  let last = 0;
  const gapsMs: number[] = [];
  for await (const event of engine.generate(planTurn(request))) {
    if (event.type !== "delta" || event.text === "") continue;
    const now = performance.now();
    if (ttftMs === undefined) ttftMs = now - started;
    else gapsMs.push(now - last);
    last = now;
  }
  return { ms: performance.now() - started, ok: true, ttftMs, gapsMs };
}
