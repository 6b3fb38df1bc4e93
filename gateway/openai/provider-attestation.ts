// GET /v1/providers/{id}/attestation: the evidence the coordinator verified when it granted a listed provider
// its rung, for anyone to re-check offline (`svc-agent verify --attestation`). It shows the providers that
// GET /v1/providers lists (at or above the floor), found by whole id or unique prefix as a pin is.
import { ApiError } from "../../src/errors.ts";
import { qualified } from "../../src/receipt/rungs.ts";
import { readDirectory } from "../directory/directory.ts";
import { sendJson } from "../http/respond.ts";
import type { RouteContext } from "../context.ts";
import { MIN_PIN_LENGTH } from "../../src/openai/chat-request.ts";
import { attestationAuditFields } from "./listing.ts";

const PROVIDER_ID = new RegExp(`^[0-9a-f]{${MIN_PIN_LENGTH},64}$`);

export async function providerAttestation(ctx: RouteContext, param: string): Promise<void> {
  const wanted = param.toLowerCase();
  if (!PROVIDER_ID.test(wanted)) {
    throw new ApiError("invalid_value", `The provider id must be a whole id (64 hex digits) or a prefix of at least ${MIN_PIN_LENGTH} of them.`);
  }
  const listed = qualified(await readDirectory(ctx.gateway.directory), ctx.gateway.floor);
  const exact = listed.find((p) => p.id === wanted);
  const matches = exact ? [exact] : listed.filter((p) => p.id.startsWith(wanted));
  if (matches.length > 1) throw new ApiError("invalid_value", `The provider id ${wanted} matches ${matches.length} providers; send more of it.`);
  // the provider may have left between the listing and this question: then it is not found either
  const record = matches[0] === undefined ? undefined : await ctx.gateway.directory.attestation(matches[0].id);
  if (record === undefined) {
    throw new ApiError("provider_not_found", `No provider ${wanted} is listed now; GET /v1/providers lists the providers at or above this gateway's floor.`);
  }
  sendJson(ctx.res, 200, { ...record, ...attestationAuditFields(ctx.gateway, matches[0]!.id) });
}
