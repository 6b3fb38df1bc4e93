// The usage views' handlers: each key's days for the settings page, and the operator's totals per user and
// provider at /settings/usage, as HTML for a signed-in admin or as JSON for a request with an operator key.
import type { IncomingMessage, ServerResponse } from "node:http";
import { ApiError } from "../../src/errors.ts";
import { sendError, sendJson } from "../http/respond.ts";
import type { KeyRecord, UsageCounts, User } from "../keys/key-store.ts";
import { seriesByKey, totalsBy, totalSeries, USAGE_DAYS, usageWindow } from "../keys/usage.ts";
import type { UserKeys } from "../keys/user-keys.ts";
import type { Admins } from "./admins.ts";
import type { Html } from "./html.ts";
import { redirect, sendHtml } from "./respond.ts";
import type { Sessions } from "./session.ts";
import { keyUsageSection, operatorUsagePage, type OperatorUsageView, type UserTotal } from "./usage-pages.ts";

export interface UsageDeps {
  users: UserKeys;
  sessions: Sessions;
  admins: Admins;
}

/** The settings page's section: the signed-in user's own keys, read by owner in the store's query. */
export async function keyUsageFor({ users, admins }: UsageDeps, user: User, keys: readonly KeyRecord[], now = Date.now()): Promise<Html> {
  const window = usageWindow(USAGE_DAYS, now);
  const series = seriesByKey(await users.dailyUsage(window[0]!, user.id), window);
  return keyUsageSection({ keys, series, admin: admins.isAdmin(user) });
}

const OPERATOR_KEYS = "operator keys (SVC_OPERATOR_KEYS)";

/** Every key's use in the window, totalled per user (operator keys as one line) and per provider. */
export async function operatorUsage(users: UserKeys, now = Date.now()): Promise<Omit<OperatorUsageView, "signedIn">> {
  const window = usageWindow(USAGE_DAYS, now);
  const rows = await users.dailyUsage(window[0]!); // flushes first, so the keys' last-used times below are current too
  const keys = new Map((await users.store.listAllKeys()).map((key) => [key.id, key]));
  const ownerOf = (keyId: string) => keys.get(keyId)?.userId ?? null;
  // one pass over the rows for each user's used keys and last day; the window's rows are sorted by day
  const seen = new Map<number | null, { keys: Set<string>; lastDay: string }>();
  for (const row of rows) {
    const entry = seen.get(ownerOf(row.keyId)) ?? { keys: new Set<string>(), lastDay: "" };
    entry.keys.add(row.keyId);
    entry.lastDay = row.day;
    seen.set(ownerOf(row.keyId), entry);
  }
  const userTotals: UserTotal[] = [...totalsBy(rows, window, (row) => ownerOf(row.keyId))].map(([userId, counts]) => {
    const { keys: used, lastDay } = seen.get(userId)!;
    const own = [...used].map((id) => keys.get(id));
    const lastUsed = own.map((key) => key?.lastUsedAt ?? null).filter((at) => at !== null);
    return {
      label: userId === null ? OPERATOR_KEYS : (own[0]?.owner ?? `user ${userId}`),
      keys: own.length,
      counts,
      lastUsedAt: lastUsed.length === 0 ? null : Math.max(...lastUsed),
      lastDay,
    };
  });
  const providers = [...totalsBy(rows, window, (row) => row.providerId)].map(([providerId, counts]) => ({ providerId, counts }));
  return { window, total: totalSeries(rows, window), users: userTotals, providers };
}

const counts = (c: UsageCounts) => ({ requests: c.requests, prompt_tokens: c.promptTokens, completion_tokens: c.completionTokens });

/** The same totals for scripts: snake_case as the OpenAI routes write, instants as ISO strings. */
function usageJson(view: Omit<OperatorUsageView, "signedIn">) {
  return {
    object: "usage",
    since: view.window[0],
    until: view.window.at(-1),
    users: view.users.map((u) => ({ user: u.label, keys: u.keys, ...counts(u.counts), last_used_at: u.lastUsedAt === null ? null : new Date(u.lastUsedAt).toISOString(), last_day: u.lastDay })),
    providers: view.providers.map((p) => ({ provider: p.providerId, ...counts(p.counts) })),
    daily: view.total.map((d) => ({ day: d.day, ...counts(d) })),
  };
}

const operatorOnly = () =>
  new ApiError("operator_only", "Only operators see every user's usage: use an operator key, or sign in with an email on the gateway's --admin-emails list.");

/** GET /settings/usage. A bearer key is an API client: JSON, errors in the SPEC envelope; else a browser. */
export async function showOperatorUsage(deps: UsageDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.headers.authorization !== undefined) {
    try {
      if (!(await deps.admins.isOperatorRequest(req))) throw operatorOnly();
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      return sendError(req, res, err);
    }
    return sendJson(res, 200, usageJson(await operatorUsage(deps.users)), { "cache-control": "no-store" });
  }
  const session = await deps.sessions.read(req.headers.cookie);
  // signed out: to the settings page, which offers sign-in, as the other pages' links do
  if (session === undefined) return redirect(res, "/settings");
  if (!deps.admins.isAdmin(session.user)) throw operatorOnly();
  const signedIn = { user: session.user, csrf: deps.sessions.csrfToken(session.sessionId) };
  sendHtml(res, 200, operatorUsagePage({ ...(await operatorUsage(deps.users)), signedIn }));
}
