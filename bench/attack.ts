// Bench section "attack" (docs/security.md): an honest caller's latency while another key sends hostile JSON
// Schemas as fast as its rate limit lets it, beside the same honest load with no attack, in one run. What it
// shows is what the schema bounds leave of an attack: one step budget (about 50 ms) per admitted request. Then
// (issue 41) another caller's GET /v1/models while one key sends 4 MB bodies, nested 2 million deep or flat.
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { startProcess, TSX } from "../harness/process.ts";
import type { WrittenTinyCatalog } from "../tiny-model/catalog.ts";
import { LoadClient, type Sample } from "./load.ts";
import { OPERATOR_KEY, startAgent, startGateway } from "./procs.ts";
import { summarize, type Summary, type Table } from "./stats.ts";

const ATTACK_KEY = "sk-svc_bench_attack_key";
/** Each operator key's requests per minute: the attacker's budget of schemas, and well above the honest pace. */
const KEY_RPM = 600;
/** The honest caller's pace: one request every this many ms (300 a minute, inside KEY_RPM). */
const HONEST_EVERY_MS = 200;
/** Requests the attacker keeps in flight. */
const ATTACK_CONCURRENCY = 2;
/** An enum checked against 100 × 20 nested anyOf branches: it runs the request's step budget out (schema_too_complex). */
const HOSTILE_SCHEMA = {
  enum: Array.from({ length: 100 }, (_, i) => `m${i}`),
  not: { anyOf: Array.from({ length: 100 }, () => ({ anyOf: Array.from({ length: 20 }, (_, j) => ({ maxLength: j, not: {} })) })) },
};

export interface AttackRow {
  phase: "no attack" | "under attack";
  honest: Summary;
  honestErrors: number;
  /** The attacker's answers by status over the phase. */
  attack: Record<string, number>;
  seconds: number;
}

/** The big bodies bench/body-flood.ts sends, by its kind argument: about 4 MB each, in a field nothing reads. */
const BODIES = { "nested 2,000,000 deep": "nested", "flat, 1,900,000 numbers": "flat" } as const;

export interface BodyRow {
  phase: "no attack" | keyof typeof BODIES;
  models: Summary;
  /** The attacker's answers by status. */
  attack: Record<string, number>;
}

export async function attackBench(dir: string, tiny: WrittenTinyCatalog, quick: boolean): Promise<{ rows: (AttackRow | BodyRow)[]; tables: Table[] }> {
  const gateway = await startGateway(dir, {
    catalogPath: tiny.catalogPath,
    name: "attack-gateway",
    args: ["--key-rpm", String(KEY_RPM)],
    operatorKeys: [OPERATOR_KEY, ATTACK_KEY],
  });
  const agent = await startAgent(dir, "attack-agent", gateway.coordinatorUrl, tiny, ["--engine", "synthetic", "--synthetic-tokens", "16"]);
  const honest = new LoadClient({ url: gateway.url, key: OPERATOR_KEY, model: tiny.catalog.default }, 1);
  const attacker = new LoadClient({ url: gateway.url, key: ATTACK_KEY, model: tiny.catalog.default }, ATTACK_CONCURRENCY);
  const n = quick ? 50 : 200;
  const body = { messages: [{ role: "user", content: "Write one sentence about the sea." }], max_tokens: 16, temperature: 0 };
  const hostile = { ...body, response_format: { type: "json_schema", json_schema: { name: "attack", schema: HOSTILE_SCHEMA } } };
  const rows: AttackRow[] = [];
  const bodyRows: BodyRow[] = [];
  try {
    for (let i = 0; i < 10; i++) await honest.chat(body, false); // warm the path before anything is counted
    for (const phase of ["no attack", "under attack"] as const) {
      const statuses: Record<string, number> = {};
      let attacking = phase === "under attack";
      const attacks = Array.from({ length: attacking ? ATTACK_CONCURRENCY : 0 }, async () => {
        while (attacking) {
          // a refusal's reason starts with its HTTP status (LoadClient.chat); a socket error with other words
          let status = "200";
          await attacker.chat(hostile, false, (why) => (status = /^\d{3}\b/.exec(why)?.[0] ?? "error"));
          statuses[status] = (statuses[status] ?? 0) + 1;
        }
      });
      const started = performance.now();
      const samples: Sample[] = [];
      for (let i = 0; i < n; i++) {
        const next = performance.now() + HONEST_EVERY_MS;
        samples.push(await honest.chat(body, false, (why) => console.error(`attack (honest caller): ${why}`)));
        await sleep(Math.max(0, next - performance.now()));
      }
      attacking = false;
      await Promise.all(attacks);
      const ok = samples.filter((s) => s.ok);
      rows.push({ phase, honest: summarize(ok.map((s) => s.ms)), honestErrors: samples.length - ok.length, attack: statuses, seconds: (performance.now() - started) / 1000 });
    }
    bodyRows.push(...(await bodyAttack(gateway.url, tiny.catalog.default, quick ? 50 : 200)));
  } finally {
    honest.close();
    attacker.close();
    await agent.proc.stop();
    await gateway.proc.stop();
  }
  return { rows: [...rows, ...bodyRows], tables: [table(rows), bodyTable(bodyRows)] };
}

/** Another caller's GET /v1/models, `n` one after another, alone and while the attack key keeps two big bodies in flight. */
async function bodyAttack(url: string, model: string, n: number): Promise<BodyRow[]> {
  const rows: BodyRow[] = [];
  const models = async () => {
    const started = performance.now();
    const res = await fetch(`${url}/v1/models`, { headers: { authorization: `Bearer ${OPERATOR_KEY}` } });
    await res.arrayBuffer();
    return performance.now() - started;
  };
  for (let i = 0; i < 10; i++) await models();
  for (const phase of ["no attack", ...Object.keys(BODIES)] as BodyRow["phase"][]) {
    // the attacker in a process of its own: writing its bodies would otherwise delay this one's requests
    const flood = phase === "no attack" ? undefined : startProcess(fileURLToPath(new URL("./body-flood.ts", import.meta.url)), [url, ATTACK_KEY, BODIES[phase], model, String(ATTACK_CONCURRENCY)], { nodeArgs: TSX, name: "body-flood" });
    await flood?.waitFor(/^flooding$/m);
    const times: number[] = [];
    for (let i = 0; i < n; i++) {
      times.push(await models());
      await sleep(20);
    }
    await flood?.stop();
    const attack = flood === undefined ? {} : (JSON.parse(flood.stdout().trim().split("\n").at(-1)!) as Record<string, number>);
    rows.push({ phase, models: summarize(times), attack });
  }
  return rows;
}

function bodyTable(rows: BodyRow[]): Table {
  return {
    title: "6b. Big and deep bodies: another caller's GET /v1/models while one key sends 4 MB bodies, two in flight (ms)",
    columns: ["phase", "n", "p50", "p90", "p99", "max", "attack answers"],
    rows: rows.map((r) => [r.phase, r.models.n, r.models.p50, r.models.p90, r.models.p99, r.models.max, Object.entries(r.attack).map(([s, c]) => `${c}×${s}`).join(" ") || "-"]),
    note: "target (issue 41): p99 under 100 ms. A nested body is 400 body_too_deep after a linear scan in a parse worker; a flat one is parsed there, never on the event loop the other caller shares.",
  };
}

function table(rows: AttackRow[]): Table {
  return {
    title: "6. Under attack: an honest caller while another key sends hostile schemas at its rate limit (ms)",
    columns: ["phase", "honest n", "honest p50", "honest p90", "honest p99", "honest errors", "attack 400", "attack 429", "attack other", "seconds"],
    rows: rows.map((r) => {
      const other = Object.entries(r.attack).filter(([s]) => s !== "400" && s !== "429").reduce((sum, [, c]) => sum + c, 0);
      return [r.phase, r.honest.n, r.honest.p50, r.honest.p90, r.honest.p99, r.honestErrors, r.attack["400"] ?? 0, r.attack["429"] ?? 0, other, r.seconds];
    }),
    note: `honest: one non-stream request every ${HONEST_EVERY_MS} ms to a synthetic agent. attack: ${ATTACK_CONCURRENCY} requests in flight, each a schema that runs the step budget out (400 schema_too_complex) until the key's ${KEY_RPM} requests a minute are spent (then 429, before any schema work).`,
  };
}
