// DESIGN §5 sealed sessions end to end: a canary prompt goes gateway → coordinator → agent and back, and
// appears nowhere in what the coordinator relayed, what it logged, or its heap.
import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster, type Cluster } from "../fixtures/cluster.ts";
import { post, waitForProvider } from "../fixtures/gateway.ts";
import { startTap, type Tap } from "../fixtures/ws-tap.ts";

const CANARY = `canary-${randomBytes(12).toString("hex")}`;
const LABEL = `label-${randomBytes(6).toString("hex")}`;
let cluster: Cluster;
let snapshots: string;
const taps: Tap[] = [];

beforeAll(async () => {
  const dir = join(process.env.TMPDIR ?? "/tmp", `svc-heap-${randomBytes(4).toString("hex")}`);
  mkdirSync(dir, { recursive: true });
  snapshots = dir;
  cluster = await startCluster({ coordinatorEnv: { NODE_OPTIONS: `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${dir}` } });
}, 60_000);
afterAll(async () => {
  await Promise.all(taps.map((t) => t.close()));
  await cluster.stop();
  rmSync(snapshots, { recursive: true, force: true });
});

describe("DESIGN §5 Sealed sessions: the coordinator only relays ciphertext", () => {
  it("a canary prompt and its answer appear nowhere in the coordinator's frames, logs or heap snapshot", async () => {
    const gatewayTap = await startTap(cluster.coordinator.url);
    const agentTap = await startTap(cluster.coordinator.url);
    taps.push(gatewayTap, agentTap);
    const gateway = await cluster.startGateway(["--coordinator", gatewayTap.url]);
    const agent = await cluster.startAgent("process", { coordinatorUrl: agentTap.url, args: ["--name", LABEL] });
    await waitForProvider(gateway, agent.providerId);

    const res = await post(gateway, "/v1/chat/completions", {
      messages: [{ role: "system", content: `Repeat ${CANARY}.` }, { role: "user", content: CANARY }],
      max_tokens: 16,
    });
    expect(res.status).toBe(200);
    const answer = ((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content;

    // the agent's `end` follows its last frame, so it may still be on the wire when the caller has its answer
    await expect.poll(() => agentTap.frames.some((f) => f.includes('"t":"end"')), { timeout: 10_000 }).toBe(true);
    // the taps saw the whole session: the directory, the sealed request placed, the sealed frames
    const frames = [...gatewayTap.frames, ...agentTap.frames].join("\n");
    for (const kind of ['"t":"directory"', '"t":"place"', '"t":"session"', '"t":"frame"', '"t":"end"']) expect(frames).toContain(kind);
    expect(frames).not.toContain(CANARY);
    if (answer.length >= 4) expect(frames).not.toContain(JSON.stringify(answer).slice(1, -1));

    const logs = cluster.coordinator.stdout() + cluster.coordinator.stderr();
    expect(logs).toContain(agent.providerId);
    expect(logs).not.toContain(CANARY);

    cluster.coordinator.child.kill("SIGUSR2");
    const file = await writtenSnapshot(snapshots);
    const heap = readFileSync(file, "utf8");
    expect(heap).toContain(LABEL); // the snapshot holds what the coordinator does know
    expect(heap).not.toContain(CANARY);
  });

  it("a non-stream answer comes back in one sealed frame, beside its receipt; a stream in several", async () => {
    const agentTap = await startTap(cluster.coordinator.url);
    taps.push(agentTap);
    const gateway = await cluster.startGateway();
    const agent = await cluster.startAgent("process", { coordinatorUrl: agentTap.url });
    await waitForProvider(gateway, agent.providerId);
    const framesOf = async (stream: boolean) => {
      const before = agentTap.frames.length;
      const res = await post(gateway, "/v1/chat/completions", { messages: [{ role: "user", content: "Hi" }], max_tokens: 12, temperature: 0, provider: agent.providerId, stream });
      expect(res.status).toBe(200);
      await res.text();
      await expect.poll(() => agentTap.frames.slice(before).some((f) => f.includes('"t":"end"')), { timeout: 10_000 }).toBe(true);
      return agentTap.frames.slice(before).filter((f) => f.includes('"t":"frame"')).length;
    };
    expect(await framesOf(false)).toBe(1);
    // llama.cpp yields its tokens one evaluation apart, so a stream's pieces go out as they come
    expect(await framesOf(true)).toBeGreaterThan(1);
  });
});

/** The heap snapshot in `dir` once written: it is written in one go, so it is done when its size stops changing. */
async function writtenSnapshot(dir: string): Promise<string> {
  let seen = { path: "", size: 0 };
  const settled = () => {
    const name = readdirSync(dir).find((n) => n.endsWith(".heapsnapshot"));
    if (name === undefined) return false;
    const path = join(dir, name);
    const size = statSync(path).size;
    const same = size > 0 && path === seen.path && size === seen.size;
    seen = { path, size };
    return same;
  };
  await expect.poll(settled, { timeout: 40_000, interval: 300 }).toBe(true);
  return seen.path;
}
