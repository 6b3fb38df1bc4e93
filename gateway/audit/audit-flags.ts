// `svc-gateway serve`'s audit flags as values (issue 43 item 2): each bad one a usage error naming the flag.
import { InvalidArgumentError } from "commander";
import { positiveInteger } from "../../src/process/cli-options.ts";
import { MAX_AUDIT_IDENTITIES } from "./identities.ts";

/** `--audit-models alias=PATH,…`: the reference copies, alias to GGUF path. */
export function auditModels(value: string): Map<string, string> {
  const models = new Map<string, string>();
  for (const pair of value.split(",").map((p) => p.trim()).filter((p) => p !== "")) {
    const at = pair.indexOf("=");
    if (at <= 0 || at === pair.length - 1) throw new InvalidArgumentError(`"${pair}" is not alias=PATH`);
    const alias = pair.slice(0, at);
    if (models.has(alias)) throw new InvalidArgumentError(`${alias} is named twice`);
    models.set(alias, pair.slice(at + 1));
  }
  if (models.size === 0) throw new InvalidArgumentError("name at least one alias=PATH");
  return models;
}

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** `--audit-floor 60m`: a duration with its unit (ms, s, m, h), in ms. */
export function duration(value: string): number {
  const match = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)$/.exec(value.trim());
  const ms = match === null ? NaN : Number(match[1]) * UNITS[match[2]!]!;
  if (!(ms > 0) || !Number.isFinite(ms)) throw new InvalidArgumentError("a duration such as 60m, 90s or 2h");
  return Math.round(ms);
}

/** `--audit-identities 16`: the pool's size, 1 to MAX_AUDIT_IDENTITIES keys. */
export function auditIdentities(value: string): number {
  const n = positiveInteger(value);
  if (n > MAX_AUDIT_IDENTITIES) throw new InvalidArgumentError(`at most ${MAX_AUDIT_IDENTITIES}`);
  return n;
}
