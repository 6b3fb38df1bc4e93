// The auditor's parts as `svc-gateway serve --audit-models` starts them: the reference copies checked against the
// catalog, the corpus read, and the scheduler, rescore worker and keeper joined to this gateway's path, bars and store.
import type { Logger } from "pino";
import type { Catalog } from "../../src/catalog.ts";
import { sha256File } from "../../src/crypto/sha256-node.ts";
import type { Gateway } from "../context.ts";
import { sendThrough } from "./audit-session.ts";
import { Auditor } from "./auditor.ts";
import type { AuditIdentities } from "./identities.ts";
import { CorpusIndex, draftAudit, TrafficShapes } from "./traffic-shape.ts";
import { readCorpus, type CorpusItem } from "./corpus.ts";
import { auditKeeper, type KeepParts } from "./keep-audit.ts";
import type { AuditRecords } from "./records.ts";
import { ownRescorer, parseRescorerCommand, RescoreWorker } from "./rescore-worker.ts";
import { AuditScheduler, REAL_DICE, type AuditPacing } from "./scheduler.ts";

export interface AuditorSettings {
  /** Alias → the operator's reference GGUF. */
  models: ReadonlyMap<string, string>;
  corpusPath: string | undefined;
  pacing: AuditPacing;
  threads: number;
  /** `--audit-identities`: how many keys of the svc-auditor user the audits are sent under (identities.ts). */
  identities: number;
  /** `--audit-rescorer`: a command line instead of the package's own `svc-agent rescore`. */
  rescorer?: string | undefined;
  /** The gateway's `--catalog`, handed to the rescorer. */
  catalogPath?: string | undefined;
}

export interface CheckedAuditor {
  settings: AuditorSettings;
  corpus: CorpusItem[];
}

/** Checks the settings before anything starts; throws an Error naming the flag at fault. */
export async function checkAuditor(settings: AuditorSettings, catalog: Catalog): Promise<CheckedAuditor> {
  if (settings.corpusPath === undefined) throw new Error("--audit-models needs --audit-corpus FILE: the prompts the audits send");
  const corpus = readCorpus(settings.corpusPath);
  for (const [alias, path] of settings.models) {
    const entry = catalog.models.find((m) => m.alias === alias);
    if (entry === undefined) throw new Error(`--audit-models: ${alias} is not an alias of the catalog`);
    let sha: string;
    try {
      sha = await sha256File(path);
    } catch (err) {
      throw new Error(`--audit-models: cannot read ${path}: ${(err as Error).message}`);
    }
    if (sha !== entry.sha256) throw new Error(`--audit-models: ${path} has SHA-256 ${sha}; the catalog pins ${alias} to ${entry.sha256}`);
  }
  return { settings, corpus };
}

/** Starts the auditor on this gateway: it sends through `gateway`'s own path, bars through `directory`, and keeps what it judged. */
export function startAuditor(
  gateway: Gateway,
  directory: { bar(id: string, auditId: string): void },
  { settings, corpus }: CheckedAuditor,
  identities: AuditIdentities,
  records: AuditRecords,
  keep: Omit<KeepParts, "threads" | "catalog" | "log">,
  log: Logger,
): { auditor: Auditor; shapes: TrafficShapes; close(): Promise<void> } {
  const worker = new RescoreWorker({ command: settings.rescorer === undefined ? ownRescorer() : parseRescorerCommand(settings.rescorer), models: settings.models, threads: settings.threads, catalogPath: settings.catalogPath });
  const shapes = new TrafficShapes(REAL_DICE);
  const index = new CorpusIndex(corpus);
  const auditor = new Auditor({
    send: sendThrough(gateway, identities),
    score: (job) => worker.score(job),
    bar: (id, auditId) => directory.bar(id, auditId),
    retire: (principal) => identities.retire(principal.keyId),
    keep: auditKeeper({ ...keep, threads: settings.threads, catalog: gateway.catalog, log }),
    records,
    scheduler: new AuditScheduler(settings.pacing, REAL_DICE),
    corpus,
    draft: () => draftAudit(index, shapes, REAL_DICE),
    aliases: new Set(settings.models.keys()),
    threads: settings.threads,
    dice: REAL_DICE,
    log,
  });
  return {
    auditor,
    shapes,
    close: async () => {
      auditor.close();
      await worker.close();
    },
  };
}
