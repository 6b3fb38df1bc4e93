// Reads the V8 CPU profiles that `npm run bench -- --cpu-prof DIR` (or bench/profile-loop.ts) writes and prints,
// for each process, where its busy time went: by component and by function (self time), by step (inclusive).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { Command } from "commander";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/**
 * What the busy time was spent in, by the function on top of the stack (self time): exact, and what a change to
 * one library or one step of the protocol would save. First match wins.
 */
const COMPONENTS: ReadonlyArray<[component: string, patterns: string[]]> = [
  ["X25519 (key pair, Diffie-Hellman, key import)", ["@node:internal/crypto/keygen", "@node:internal/crypto/diffiehellman", "@node:internal/crypto/keys"]],
  ["Ed25519 (receipt signed or checked)", ["@node:internal/crypto/sig"]],
  ["HMAC-SHA-256 and SHA-256 (HKDF, hashes)", ["@node:internal/crypto/hash"]],
  ["ChaCha20-Poly1305 and HPKE", ["@node:internal/crypto/cipher", "@hpke/", "@noble/"]],
  ["random bytes", ["@node:internal/crypto/random"]],
  ["socket writes (syscalls)", ["writev@", "writeString@", "writeBuffer@", "writeUtf8String@", "writeLatin1String@"]],
  ["zod", ["@zod/"]],
  ["canonical JSON", ["@canonicalize/"]],
  ["logging (pino, console)", ["@pino/", "@sonic-boom/", "consoleCall@", "@node:internal/console/"]],
  ["node:http", ["@node:_http_"]],
  ["streams, sockets, events", ["@node:internal/streams/", "@node:internal/stream_base_commons", "@node:net", "@node:events", "onStreamRead@"]],
  ["ws", ["@ws/"]],
  ["garbage collector", ["(garbage collector)@"]],
  ["svc's own code", ["@src/", "@gateway/", "@agent/"]],
];

/**
 * Steps of a request by inclusive time (the step and all it calls). Only synchronous steps are listed: the
 * stack of an async function's code after its first await starts at the microtask queue, not at the function.
 */
const STEPS: ReadonlyArray<[step: string, patterns: string[]]> = [
  ["chat body checked (parseChatRequest, zod)", ["parseChatRequest@"]],
  ["agent's message checked (parseMessage, zod)", ["parseMessage@"]],
  ["receipt signed (signReceipt)", ["signReceipt@"]],
  ["receipt checked (verifyReceipt)", ["verifyReceipt@"]],
  ["answer frame opened (openFrame)", ["openFrame@"]],
  ["HTTP answer written (sendJson)", ["sendJson@"]],
  ["access log line (pino)", ["LOG@"]],
  ["key authenticated, limits applied (authenticate)", ["authenticate@"]],
  ["sealed envelope read (readEnvelope, zod)", ["readEnvelope@"]],
  ["admission (admit)", ["admit@gateway/directory/coordinator-client"]],
  ["blind placement sent (placeBlind)", ["placeBlind@"]],
  ["coordinator message read (readToGateway)", ["readToGateway@"]],
  ["coordinator message handled (dispatch: directory, frames)", ["dispatch@gateway/directory/coordinator-client"]],
  ["receipt checked (checkReceipt)", ["checkReceipt@"]],
  ["usage noted (noteUsage)", ["noteUsage@"]],
  ["usage rows written (SQLite)", ["@libsql/"]],
  ["metrics observed", ["observe@gateway/metrics"]],
  ["session log lines (console; inflated under a profiler, which hooks console)", ["consoleCall@"]],
];

const opts = new Command("tsx bench/profile-report.ts")
  .argument("<dir>", "the folder given to --cpu-prof")
  .option("--skip <seconds>", "leave out each profile's first seconds (start-up and warm-up)", "0")
  .option("--top <n>", "how many functions to list by self time", "12")
  .parse();
const [dir] = opts.args as [string];
const { skip, top } = opts.opts<{ skip: string; top: string }>();

for (const file of profiles(dir)) report(relative(dir, file), JSON.parse(readFileSync(file, "utf8")) as Profile);

function profiles(folder: string): string[] {
  return readdirSync(folder)
    .sort()
    .flatMap((name) => {
      const path = join(folder, name);
      if (statSync(path).isDirectory()) return profiles(path);
      return name.endsWith(".cpuprofile") ? [path] : [];
    });
}

function label(frame: CallFrame): string {
  const file = frame.url.replace(/^file:\/\/.*\/node_modules\//, "").replace(/^file:\/\/.*?\/(src|gateway|agent|bench)\//, "$1/");
  return `${frame.functionName || "(anonymous)"}@${file}`;
}

function report(name: string, profile: Profile): void {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const self = new Map<string, number>();
  const components = new Map<string, number>(COMPONENTS.map(([component]) => [component, 0]));
  const steps = new Map<string, number>(STEPS.map(([step]) => [step, 0]));
  const from = profile.startTime + Number(skip) * 1e6;
  let time = profile.startTime;
  let busy = 0;
  let all = 0;
  profile.samples.forEach((id, i) => {
    time += profile.timeDeltas[i]!;
    if (time < from) return;
    all++;
    const leaf = label(byId.get(id)!.callFrame);
    if (leaf.startsWith("(idle)")) return;
    busy++;
    self.set(leaf, (self.get(leaf) ?? 0) + 1);
    const component = COMPONENTS.find(([, patterns]) => patterns.some((p) => leaf.includes(p)))?.[0] ?? "other (node internals, V8)";
    components.set(component, (components.get(component) ?? 0) + 1);
    // a step counts a sample once, however deep its function recurs in the stack
    const stack: string[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) stack.push(label(byId.get(at)!.callFrame));
    for (const [step, patterns] of STEPS) if (stack.some((frame) => patterns.some((p) => frame.includes(p)))) steps.set(step, steps.get(step)! + 1);
  });
  if (busy < all * 0.01) return; // an idle helper thread
  const pct = (n: number) => `${((100 * n) / busy).toFixed(1).padStart(5)} %`;
  console.log(`\n## ${name}: busy ${((100 * busy) / all).toFixed(1)} % of ${all} samples after ${skip} s; shares below are of the busy samples`);
  console.log("  -- by component (self time) --");
  for (const [component, n] of [...components].sort((a, b) => b[1] - a[1])) if (n > 0) console.log(`${pct(n)}  ${component}`);
  console.log("  -- synchronous steps (inclusive) --");
  for (const [step, n] of steps) if (n > 0) console.log(`${pct(n)}  ${step}`);
  console.log("  -- hottest functions (self time) --");
  for (const [fn, n] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(top))) console.log(`${pct(n)}  ${fn}`);
}
