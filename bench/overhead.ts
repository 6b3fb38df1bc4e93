// Bench section 1, gateway overhead: the same requests at concurrency 1, alternating between the direct path
// (the engine in this process) and the whole path (HTTP → gateway → coordinator → agent process, sealed,
// with a signed receipt checked), for the synthetic engine and the tiny GGUF. Added = gateway − direct.
import { Engine } from "../agent/engine/engine.ts";
import type { InferenceEngine } from "../agent/engine/inference.ts";
import type { GenerateRequest } from "../agent/engine/turn.ts";
import { ModelStore } from "../agent/models/store.ts";
import { SyntheticEngine } from "../agent/engine/synthetic-engine.ts";
import type { WrittenTinyCatalog } from "../tiny-model/catalog.ts";
import { directSample } from "./direct.ts";
import { LoadClient, type Sample } from "./load.ts";
import { OPERATOR_KEY, startAgent, startGateway } from "./procs.ts";
import { summarize, type Summary, type Table } from "./stats.ts";

const MESSAGES = [{ role: "user" as const, content: "Write one sentence about the sea." }];
const TOKENS = 16;
/** The synthetic stream's pace, so inter-token gaps have something to be compared with. */
const STREAM_TOKEN_MS = 5;

interface Case {
  label: string;
  engine: InferenceEngine;
  provider: string;
  stream: boolean;
}

export interface OverheadRow {
  path: string;
  mode: "non-stream" | "stream";
  n: number;
  direct: Summary;
  gateway: Summary;
  addedP50Ms: number;
  addedP99Ms: number;
  ttft?: { direct: Summary; gateway: Summary };
  gaps?: { direct: Summary; gateway: Summary };
}

export async function gatewayOverhead(dir: string, tiny: WrittenTinyCatalog, quick: boolean): Promise<{ rows: OverheadRow[]; tables: Table[] }> {
  const alias = tiny.catalog.default;
  const gateway = await startGateway(dir, { catalogPath: tiny.catalogPath, name: "overhead-gateway" });
  const synthetic = (ms: number) => ["--engine", "synthetic", "--synthetic-tokens", String(TOKENS), "--synthetic-token-ms", String(ms)];
  const fast = await startAgent(dir, "agent-synthetic", gateway.coordinatorUrl, tiny, synthetic(0));
  const paced = await startAgent(dir, "agent-synthetic-paced", gateway.coordinatorUrl, tiny, synthetic(STREAM_TOKEN_MS));
  const real = await startAgent(dir, "agent-tiny-gguf", gateway.coordinatorUrl, tiny, []);
  const sha256Of = (a: string) => tiny.catalog.models.find((m) => m.alias === a)!.sha256;
  const engine = new Engine({ store: new ModelStore({ catalog: tiny.catalog, modelsDir: tiny.modelsDir }) });
  const cases: Case[] = [
    { label: "synthetic", engine: new SyntheticEngine({ tokens: TOKENS, tokenMs: 0, sha256Of }), provider: fast.id, stream: false },
    { label: `synthetic, ${STREAM_TOKEN_MS} ms/token`, engine: new SyntheticEngine({ tokens: TOKENS, tokenMs: STREAM_TOKEN_MS, sha256Of }), provider: paced.id, stream: true },
    { label: "tiny GGUF", engine, provider: real.id, stream: false },
    { label: "tiny GGUF", engine, provider: real.id, stream: true },
  ];
  const client = new LoadClient({ url: gateway.url, key: OPERATOR_KEY, model: alias }, 1);
  const rows: OverheadRow[] = [];
  try {
    for (const c of cases) {
      const n = (quick ? 60 : 400) / (c.label.includes("ms/token") ? 2 : 1);
      const request: GenerateRequest = { model: alias, messages: MESSAGES, max_tokens: TOKENS, temperature: 0 };
      const body = { messages: MESSAGES, max_tokens: TOKENS, temperature: 0, provider: c.provider };
      const direct: Sample[] = [];
      const through: Sample[] = [];
      // warm both paths (model load, JIT, connections) before anything is counted
      for (let i = 0; i < 20; i++) {
        await directSample(c.engine, request);
        await client.chat(body, c.stream);
      }
      for (let i = 0; i < n; i++) {
        direct.push(await directSample(c.engine, request));
        const sample = await client.chat(body, c.stream, (why) => console.error(`overhead: ${why}`));
        if (sample.ok) through.push(sample);
      }
      rows.push(row(c, direct, through));
    }
  } finally {
    client.close();
    await engine.dispose();
    await Promise.all([fast.proc.stop(), paced.proc.stop(), real.proc.stop()]);
    await gateway.proc.stop();
  }
  return { rows, tables: tables(rows) };
}

function row(c: Case, direct: Sample[], through: Sample[]): OverheadRow {
  const d = summarize(direct.map((s) => s.ms));
  const g = summarize(through.map((s) => s.ms));
  const out: OverheadRow = {
    path: c.label,
    mode: c.stream ? "stream" : "non-stream",
    n: through.length,
    direct: d,
    gateway: g,
    addedP50Ms: g.p50 - d.p50,
    addedP99Ms: g.p99 - d.p99,
  };
  if (c.stream) {
    out.ttft = { direct: summarize(direct.map((s) => s.ttftMs ?? NaN)), gateway: summarize(through.map((s) => s.ttftMs ?? NaN)) };
    out.gaps = { direct: summarize(direct.flatMap((s) => s.gapsMs ?? [])), gateway: summarize(through.flatMap((s) => s.gapsMs ?? [])) };
  }
  return out;
}

function tables(rows: OverheadRow[]): Table[] {
  const whole: Table = {
    title: "1. Gateway overhead, concurrency 1: whole request (ms)",
    columns: ["engine", "mode", "n", "direct p50", "gateway p50", "added p50", "direct p99", "gateway p99", "added p99"],
    rows: rows.map((r) => [r.path, r.mode, r.n, r.direct.p50, r.gateway.p50, r.addedP50Ms, r.direct.p99, r.gateway.p99, r.addedP99Ms]),
    note: "direct: the engine called in the bench process. gateway: HTTP → gateway → coordinator → agent process and back, sealed, receipt signed and verified.",
  };
  const streams = rows.filter((r) => r.ttft && r.gaps);
  const stream: Table = {
    title: "1. Gateway overhead, concurrency 1: streaming (ms)",
    columns: ["engine", "TTFT direct p50", "TTFT gateway p50", "added TTFT p50", "added TTFT p99", "gap direct p50", "gap gateway p50", "added gap p50", "added gap p99"],
    rows: streams.map((r) => [
      r.path,
      r.ttft!.direct.p50,
      r.ttft!.gateway.p50,
      r.ttft!.gateway.p50 - r.ttft!.direct.p50,
      r.ttft!.gateway.p99 - r.ttft!.direct.p99,
      r.gaps!.direct.p50,
      r.gaps!.gateway.p50,
      r.gaps!.gateway.p50 - r.gaps!.direct.p50,
      r.gaps!.gateway.p99 - r.gaps!.direct.p99,
    ]),
    note: "TTFT: arrival to first content token. gap: time between consecutive content tokens.",
  };
  return [whole, stream];
}
