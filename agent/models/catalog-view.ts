// The human-readable catalog table of `svc-agent catalog`: every alias with its pin, and whether this
// machine could serve it (file present, enough memory).
import type { Catalog, CatalogEntry } from "../../src/catalog.ts";
import { alignTable } from "../../src/process/text-table.ts";

export interface MachineView {
  memoryGb: number;
  isPresent: (alias: string) => boolean;
  /** Where the alias's file is looked for. */
  pathFor: (alias: string) => string;
  /** The command that fetches it there, when one would (agent/models/pull-command.ts). */
  pullCommand: (alias: string) => string | undefined;
}

export function formatBytes(bytes: number): string {
  if (bytes >= 1e9) return `${(bytes / 1e9).toFixed(2)} GB`;
  if (bytes >= 1e6) return `${(bytes / 1e6).toFixed(1)} MB`;
  if (bytes >= 1e3) return `${(bytes / 1e3).toFixed(1)} kB`;
  return `${bytes} B`;
}

function formatGb(gb: number): string {
  return Number.isInteger(gb) ? `${gb} GB` : `${gb.toFixed(1)} GB`;
}

/** What this machine lacks to serve the entry, or "ready". */
export function readiness(entry: CatalogEntry, machine: MachineView): string {
  const lacks: string[] = [];
  if (!machine.isPresent(entry.alias)) lacks.push(`not downloaded (${machine.pullCommand(entry.alias) ?? `no file at ${machine.pathFor(entry.alias)}`})`);
  if (entry.min_memory_gb > machine.memoryGb) lacks.push(`needs ${formatGb(entry.min_memory_gb)} of memory`);
  return lacks.length === 0 ? "ready" : lacks.join("; ");
}

export function catalogTable(catalog: Catalog, machine: MachineView): string {
  const header = ["ALIAS", "HUB ID", "REVISION", "SIZE", "MIN MEMORY", "LICENSE", `THIS MACHINE (${formatGb(machine.memoryGb)})`];
  const rows = catalog.models.map((m) => [
    m.alias === catalog.default ? `${m.alias} (default)` : m.alias,
    m.hub_id,
    m.revision.slice(0, 7),
    formatBytes(m.size_bytes),
    formatGb(m.min_memory_gb),
    m.license,
    readiness(m, machine),
  ]);
  return alignTable([header, ...rows]);
}
