// Plain-text tables for both command lines (svc-agent catalog, svc-gateway providers list and keys usage):
// columns padded to their widest cell, two spaces apart.

/** The rows (a header first) as aligned lines, trailing spaces trimmed. */
export function alignTable(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd()).join("\n");
}
