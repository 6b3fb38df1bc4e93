// Usage arithmetic on the store's per-day rows: UTC days, the window of the last N days, each key's series
// (one entry per day, zeros included) and totals grouped any way. Pure, so every store shares it.
import type { DailyUsage, UsageCounts } from "./key-store.ts";

/** How many days the settings page charts and the operator page totals. */
export const USAGE_DAYS = 30;

const DAY_MS = 86_400_000;

/** The UTC calendar day of an instant, as `YYYY-MM-DD`: the usage table's day, whatever the server's zone. */
export const utcDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** The last `days` UTC days ending with today, oldest first. */
export function usageWindow(days: number, now = Date.now()): string[] {
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  return Array.from({ length: days }, (_, i) => utcDay(today - (days - 1 - i) * DAY_MS));
}

export const zeroCounts = (): UsageCounts => ({ requests: 0, promptTokens: 0, completionTokens: 0 });

function add(into: UsageCounts, from: UsageCounts): UsageCounts {
  into.requests += from.requests;
  into.promptTokens += from.promptTokens;
  into.completionTokens += from.completionTokens;
  return into;
}

export interface DayCounts extends UsageCounts {
  day: string;
}

/** Each key's counts per day of the window (every provider summed; days without use are zeros). */
export function seriesByKey(rows: readonly DailyUsage[], window: readonly string[]): Map<string, DayCounts[]> {
  const position = new Map(window.map((day, i) => [day, i]));
  const series = new Map<string, DayCounts[]>();
  for (const row of rows) {
    const i = position.get(row.day);
    if (i === undefined) continue;
    let days = series.get(row.keyId);
    if (days === undefined) {
      days = window.map((day) => ({ day, ...zeroCounts() }));
      series.set(row.keyId, days);
    }
    add(days[i]!, row);
  }
  return series;
}

/** Totals of the rows inside the window, grouped by `group` (a key's owner, a provider…), largest first. */
export function totalsBy<G>(rows: readonly DailyUsage[], window: readonly string[], group: (row: DailyUsage) => G): Map<G, UsageCounts> {
  const inWindow = new Set(window);
  const totals = new Map<G, UsageCounts>();
  for (const row of rows) {
    if (!inWindow.has(row.day)) continue;
    const name = group(row);
    totals.set(name, add(totals.get(name) ?? zeroCounts(), row));
  }
  const size = (c: UsageCounts) => c.promptTokens + c.completionTokens;
  return new Map([...totals].sort(([, a], [, b]) => size(b) - size(a) || b.requests - a.requests));
}

/** The counts of a whole series. */
export const sumCounts = (counts: readonly UsageCounts[]): UsageCounts => counts.reduce(add, zeroCounts());

/** Every row's counts summed per day of the window: the operator's one chart. */
export function totalSeries(rows: readonly DailyUsage[], window: readonly string[]): DayCounts[] {
  const all = seriesByKey(rows.map((row) => ({ ...row, keyId: "" })), window).get("");
  return all ?? window.map((day) => ({ day, ...zeroCounts() }));
}
