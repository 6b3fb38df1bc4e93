// `svc-gateway keys usage`: the key store's per-day counts over the last N UTC days as two plain tables, per
// key (operator keys too) and per provider, for an operator at a terminal.
import type { KeyStore, UsageCounts } from "./key-store.ts";
import { alignTable } from "../../src/process/text-table.ts";
import { totalsBy, usageWindow } from "./usage.ts";

const when = (ms: number | null) => (ms === null ? "-" : new Date(ms).toISOString().slice(0, 16).replace("T", " "));
const cells = (c: UsageCounts) => [String(c.requests), String(c.promptTokens), String(c.completionTokens)];

export async function usageReport(store: KeyStore, days: number, now = Date.now()): Promise<string> {
  const window = usageWindow(days, now);
  const rows = await store.dailyUsage(window[0]!);
  const head = `usage ${window[0]} to ${window.at(-1)} (UTC, ${days} day${days === 1 ? "" : "s"}), from verified receipts`;
  if (rows.length === 0) return `${head}: none`;
  const keys = new Map((await store.listAllKeys()).map((key) => [key.id, key]));
  const perKey = [["KEY", "PREFIX", "OWNER", "NAME", "REQUESTS", "PROMPT", "COMPLETION", "LAST USED"]];
  for (const [keyId, counts] of totalsBy(rows, window, (row) => row.keyId)) {
    const key = keys.get(keyId);
    // operator keys have no row: they are named by their digest, never by the key
    const who = key === undefined ? ["-", "operator", "-"] : [key.prefix, key.owner ?? "-", JSON.stringify(key.name)];
    perKey.push([keyId, ...who, ...cells(counts), when(key?.lastUsedAt ?? null)]);
  }
  const perProvider = [["PROVIDER", "REQUESTS", "PROMPT", "COMPLETION"]];
  for (const [providerId, counts] of totalsBy(rows, window, (row) => row.providerId)) perProvider.push([providerId, ...cells(counts)]);
  return `${head}\n\n${alignTable(perKey)}\n\n${alignTable(perProvider)}`;
}
