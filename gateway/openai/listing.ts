// GET /v1/models and GET /v1/providers (SPEC §4.2, §4.3): what qualified providers offer right now.
import { CATALOG_EPOCH, kindOf, type CatalogEntry } from "../../src/catalog.ts";
import { ApiError } from "../../src/errors.ts";
import { qualified, type TrustLevel } from "../../src/receipt/rungs.ts";
import type { ProviderRecord } from "../../src/wire/gateway.ts";
import { readDirectory } from "../directory/directory.ts";
import { sendJson } from "../http/respond.ts";
import type { Gateway, RouteContext } from "../context.ts";
import type { AuditFailure, AuditRecord } from "../audit/records.ts";

/** SPEC §2.5 `owned_by`: one neutral label for every alias. */
export const OWNED_BY = "svc";

/** SPEC §4.2: the union of aliases that qualified providers advertise now, in catalog order. */
export function servableAliases(providers: readonly ProviderRecord[], floor: TrustLevel, catalogOrder: readonly string[]): string[] {
  const offered = new Set(qualified(providers, floor).flatMap((p) => p.model_ids));
  return catalogOrder.filter((alias) => offered.has(alias));
}

/** SPEC §2.5 plus `created` (the entry's pin time, else CATALOG_EPOCH) and `svc_kind`, which tells embedding models apart. */
export const modelObject = (entry: CatalogEntry) => ({
  id: entry.alias,
  object: "model",
  created: entry.created ?? CATALOG_EPOCH,
  owned_by: OWNED_BY,
  svc_kind: kindOf(entry),
});

async function servable(ctx: RouteContext): Promise<CatalogEntry[]> {
  const { catalog, floor } = ctx.gateway;
  const aliases = new Set(servableAliases(await readDirectory(ctx.gateway.directory), floor, catalog.models.map((m) => m.alias)));
  return catalog.models.filter((m) => aliases.has(m.alias));
}

export async function listModels(ctx: RouteContext): Promise<void> {
  sendJson(ctx.res, 200, { object: "list", data: (await servable(ctx)).map(modelObject) });
}

/** GET /v1/models/{id}, which the OpenAI SDKs' `models.retrieve` calls. */
export async function retrieveModel(ctx: RouteContext, id: string): Promise<void> {
  const entry = (await servable(ctx)).find((m) => m.alias === id);
  if (entry === undefined) {
    throw new ApiError("model_not_found", `No provider serves a model named ${JSON.stringify(id)} right now; GET /v1/models lists them.`, {
      param: "model",
    });
  }
  sendJson(ctx.res, 200, modelObject(entry));
}

/** Issue 43: where the gateway audits, each provider's audit record (every replica's), and whether a failed audit took it out of rotation. */
export function auditFields(gateway: Gateway, id: string): { audits?: AuditRecord; in_rotation?: boolean } {
  if (gateway.audits === undefined) return {};
  return { audits: gateway.audits.records.of(id), in_rotation: gateway.audits.barOf(id) === undefined };
}

/** The attestation record's: the same, and each failure whose signed evidence GET /v1/audits/{id} serves. */
export function attestationAuditFields(gateway: Gateway, id: string): { audits?: AuditRecord; in_rotation?: boolean; failures?: AuditFailure[] } {
  if (gateway.audits === undefined) return {};
  return { ...auditFields(gateway, id), failures: gateway.audits.records.failures(id) };
}

export async function listProviders(ctx: RouteContext): Promise<void> {
  const records = qualified(await readDirectory(ctx.gateway.directory), ctx.gateway.floor).map((p) => ({
    id: p.id,
    model_ids: p.model_ids,
    trust: p.trust,
    busy: p.busy,
    waiting: p.waiting,
    // SPEC §2.4: the serial is disclosed at the hardware rung only
    ...(p.trust === "hardware" && p.serial !== undefined ? { serial: p.serial } : {}),
    // what GET /v1/providers/{id}/attestation serves as `evidence` digests to this, so a caller refetches it only when it changes
    evidence_sha256: p.evidence_sha256,
    ...auditFields(ctx.gateway, p.id),
  }));
  sendJson(ctx.res, 200, records);
}
