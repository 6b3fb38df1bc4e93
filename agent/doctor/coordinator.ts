// `svc-agent doctor`'s checks of each coordinator: reachable, its catalog pinning the same files as ours for
// what this machine serves, and the clock skew against it (the HTTP Date header of the same answer).
import { catalogFromBody, type Catalog } from "../../src/catalog.ts";
import { fail, pass, type Check } from "./check.ts";

/** Past this, certificates and manifests can look not yet valid or expired to one side. */
export const MAX_SKEW_S = 60;
const TIMEOUT_MS = 5_000;

export async function coordinatorChecks(url: string, ours: Catalog, serving: readonly string[], now = () => Date.now()): Promise<Check[]> {
  const catalogUrl = new URL("/v1/catalog", url).toString();
  const sent = now();
  let response: Response;
  let body: unknown;
  try {
    response = await fetch(catalogUrl, { signal: AbortSignal.timeout(TIMEOUT_MS) });
    body = await response.json();
  } catch (err) {
    const cause = (err as Error & { cause?: Error }).cause?.message ?? (err as Error).message;
    return [fail(`coordinator:${url}`, `coordinator ${url} is unreachable: ${cause}`, "check the URL (svc-gateway serve prints it) and that the coordinator runs and this machine can reach it")];
  }
  const received = now();
  if (!response.ok) {
    return [fail(`coordinator:${url}`, `coordinator ${url}: GET ${catalogUrl} answered ${response.status}`, "check the URL: it is the coordinator's, not the gateway's (svc-gateway serve prints both)")];
  }
  let theirs: Catalog;
  try {
    theirs = catalogFromBody(body, catalogUrl);
  } catch (err) {
    return [fail(`coordinator:${url}`, `coordinator ${url}: ${(err as Error).message}`, "check the URL: it must be an svc coordinator")];
  }
  return [pass(`coordinator:${url}`, `coordinator ${url} is reachable`), catalogCheck(url, ours, theirs, serving), skewCheck(url, response.headers.get("date"), sent, received)];
}

/** Each alias this machine would serve must be pinned to the same file by the coordinator. */
export function catalogCheck(url: string, ours: Catalog, theirs: Catalog, serving: readonly string[]): Check {
  const id = `catalog:${url}`;
  const differ: string[] = [];
  for (const alias of serving) {
    const mine = ours.models.find((m) => m.alias === alias)!;
    const other = theirs.models.find((m) => m.alias === alias);
    if (!other) differ.push(`${alias} is not in its catalog`);
    else if (other.sha256 !== mine.sha256 || other.size_bytes !== mine.size_bytes) differ.push(`${alias} is pinned to sha256 ${other.sha256.slice(0, 12)}… there, ${mine.sha256.slice(0, 12)}… here`);
  }
  const data = { aliases: theirs.models.map((m) => m.alias), differ };
  if (differ.length > 0) {
    return fail(id, `coordinator ${url}'s catalog differs: ${differ.join("; ")}`, "run the svc release the operator runs, or pass --catalog FILE with the coordinator's catalog", { data });
  }
  return pass(id, `coordinator ${url}'s catalog pins the same files${serving.length > 0 ? ` for ${serving.join(", ")}` : ""}`, data);
}

/** The coordinator's clock against ours, from its Date header (whole seconds) and the request's midpoint. */
export function skewCheck(url: string, date: string | null, sent: number, received: number): Check {
  const id = `clock:${url}`;
  const theirs = date === null ? Number.NaN : Date.parse(date);
  if (Number.isNaN(theirs)) return { ...fail(id, `coordinator ${url} sent no Date header: clock skew unknown`, "none needed; check this machine's clock syncs with network time", { needed: false }) };
  // the header truncates to the second: its middle is the best guess
  const skewS = (theirs + 500 - (sent + received) / 2) / 1000;
  const rounded = Math.round(skewS);
  const line = `clock skew against ${url}: ${rounded === 0 ? "under 1 s" : `${Math.abs(rounded)} s ${rounded > 0 ? "behind" : "ahead"}`}`;
  if (Math.abs(skewS) <= MAX_SKEW_S) return pass(id, line, { skew_s: skewS });
  return fail(id, line, "turn on network time (macOS: System Settings > General > Date & Time; Linux: timedatectl set-ntp true)", { data: { skew_s: skewS } });
}
