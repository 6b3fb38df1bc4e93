// Distributions and tables for the benchmark: percentiles by nearest rank, the audits a detection rate needs, and
// plain-text tables that line up.

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

/**
 * Audits for a probability q of at least one detection, when one audit detects with probability p on a share f of
 * requests: ⌈ln(1 − q) / ln(1 − f·p)⌉ (null: never).
 */
export function auditsFor(q: number, p: number, f = 1): number | null {
  const hit = p * f;
  if (hit >= 1) return 1;
  if (hit <= 0) return null;
  return Math.ceil(Math.log(1 - q) / Math.log(1 - hit));
}

export interface Summary {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export function summarize(values: readonly number[]): Summary {
  return { n: values.length, p50: percentile(values, 50), p90: percentile(values, 90), p99: percentile(values, 99), max: percentile(values, 100) };
}

/** Fixed decimals that suit the magnitude: 0.042, 1.37, 12.4, 1234. */
export function fmt(value: number): string {
  if (!Number.isFinite(value)) return "-";
  if (Number.isInteger(value)) return String(value);
  const abs = Math.abs(value);
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  return value.toFixed(3);
}

export interface Table {
  title: string;
  columns: string[];
  rows: (string | number)[][];
  /** What the figures mean, printed under the table. */
  note?: string;
}

export function renderTable({ title, columns, rows, note }: Table): string {
  const cells = rows.map((r) => r.map((c) => (typeof c === "number" ? fmt(c) : c)));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => r[i]?.length ?? 0)));
  const line = (r: string[]) => `| ${r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(" | ")} |`;
  const rule = `|${widths.map((w, i) => (i === 0 ? `:${"-".repeat(w + 1)}` : `${"-".repeat(w + 1)}:`)).join("|")}|`;
  return [`### ${title}`, "", line(columns), rule, ...cells.map(line), ...(note ? ["", note] : []), ""].join("\n");
}
