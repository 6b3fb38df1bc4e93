// A process of its own that keeps `concurrency` big bodies in flight at a gateway until SIGTERM, then prints the
// answers by status as one JSON line: bench/attack.ts's attacker, apart, so that writing 4 MB bodies never delays
// the honest caller it measures in its own process. Usage: body-flood.ts URL KEY KIND MODEL CONCURRENCY.
const [url, key, kind, model, concurrency] = process.argv.slice(2) as [string, string, string, string, string];

const padded = (inner: string) => `{"model":${JSON.stringify(model)},"messages":[{"role":"user","content":"hi"}],"max_tokens":4,"padding":${inner}}`;
const body = kind === "nested" ? padded("[".repeat(2_000_000) + "]".repeat(2_000_000)) : padded(`[${"0,".repeat(1_900_000)}0]`);

const statuses: Record<string, number> = {};
let flooding = true;
process.once("SIGTERM", () => (flooding = false));
const lanes = Array.from({ length: Number(concurrency) }, async () => {
  while (flooding) {
    const res = await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body });
    await res.arrayBuffer();
    statuses[res.status] = (statuses[res.status] ?? 0) + 1;
  }
});
console.log("flooding");
await Promise.all(lanes);
console.log(JSON.stringify(statuses));
