// The settings pages' routes (`/settings`, `/auth/*`): sign-in through OIDC, list, create and revoke one's
// own keys. Every post needs a live session, a same-origin request and the session's CSRF token, and every
// key is looked up together with its owner, so no one can reach another user's keys.
import type { IncomingMessage, ServerResponse } from "node:http";
import { ApiError } from "../../src/errors.ts";
import { sendBody, sendError } from "../http/respond.ts";
import { readable, Router } from "../http/router.ts";
import { KeyCapReached } from "../keys/key-store.ts";
import type { UserKeys } from "../keys/user-keys.ts";
import type { Admins } from "./admins.ts";
import { ASSETS } from "./assets.ts";
import { NewKeyFlash } from "./new-key-flash.ts";
import type { OidcClient } from "./oidc.ts";
import { confirmRevokePage, KEY_NAME_MAX, notConfiguredPage, settingsPage, signedOutPage } from "./pages.ts";
import { readForm, redirect, sendHtml } from "./respond.ts";
import type { Sessions, SignedIn } from "./session.ts";
import { keyUsageFor, showOperatorUsage } from "./usage-routes.ts";

/** What sign-in needs; absent when the gateway runs without OIDC. */
export interface SignIn {
  oidc: OidcClient;
  sessions: Sessions;
  users: UserKeys;
  flash: NewKeyFlash;
  /** Who may see every user's usage. */
  admins: Admins;
}

/** One request for a page; `signIn` is absent when the gateway runs without OIDC. */
interface Visit {
  signIn: SignIn | undefined;
  req: IncomingMessage;
  res: ServerResponse;
  param: string;
}

interface Request extends Visit {
  signIn: SignIn;
}

type Page = (visit: Visit) => Promise<void>;

/** A page for signed-in users, or for those signing in: without OIDC it does not exist. */
const signedIn =
  (handler: (r: Request) => Promise<void>): Page =>
  async ({ signIn, ...r }) => {
    if (signIn === undefined) throw new ApiError("sign_in_not_configured", "Sign-in is not configured on this gateway.");
    return handler({ signIn, ...r });
  };

/** docs/operator-guide.md "Usage": a script sending a key reads it as JSON, so without sign-in it gets the envelope, not a page. */
const operatorUsage: Page = async (visit) => {
  if (visit.signIn === undefined && visit.req.headers.authorization !== undefined) {
    return sendError(visit.req, visit.res, new ApiError("sign_in_not_configured", "Sign-in is not configured on this gateway, so it has no usage pages: `svc-gateway keys usage` prints the counts, or start it with --oidc-issuer."));
  }
  return signedIn(({ signIn, req, res }) => showOperatorUsage(signIn, req, res))(visit);
};

const PAGES = new Router<Page>(
  [
    ...Object.entries(ASSETS).map(([path, asset]) => ({
      name: "/settings/assets/{file}",
      path,
      methods: readable<Page>(async ({ res }) => sendBody(res, 200, asset.type, asset.body, { "cache-control": "max-age=3600" })),
    })),
    {
      name: "/settings",
      path: /^\/settings\/?$/,
      methods: { GET: async ({ signIn, ...r }) => (signIn === undefined ? sendHtml(r.res, 200, notConfiguredPage()) : showSettings({ signIn, ...r })) },
    },
    { name: "/settings/keys", path: "/settings/keys", methods: { POST: signedIn(createKey) } },
    { name: "/settings/usage", path: "/settings/usage", methods: { GET: operatorUsage } },
    { name: "/settings/keys/{id}/revoke", path: /^\/settings\/keys\/(key_[0-9a-f]{24})\/revoke$/, methods: { GET: signedIn(confirmRevoke), POST: signedIn(revokeKey) } },
    { name: "/auth/login", path: "/auth/login", methods: { GET: signedIn(beginSignIn) } },
    { name: "/auth/callback", path: "/auth/callback", methods: { GET: signedIn(finishSignIn) } },
    { name: "/auth/logout", path: "/auth/logout", methods: { POST: signedIn(signOut) } },
  ],
  (_method, path) => `There is no page at ${path}.`,
);

export const isPagePath = (path: string): boolean => path === "/settings" || path.startsWith("/settings/") || path.startsWith("/auth/");

/** A matched page: its name for the log, and the work. */
export interface ResolvedPage {
  name: string;
  serve(req: IncomingMessage, res: ServerResponse): Promise<void>;
}

/**
 * Finds the page for a request, or throws 404/405 (with `allow` set on the response for a 405). Whatever
 * `serve` throws is an ApiError for the caller to render as an error page.
 */
export function resolvePage(signIn: SignIn | undefined, method: string, path: string, res: ServerResponse): ResolvedPage {
  const { name, handler, param } = PAGES.resolve(method, path, res);
  return { name, serve: (req, res) => handler({ signIn, req, res, param }) };
}

async function showSettings({ signIn, req, res }: Request): Promise<void> {
  const session = await signIn.sessions.read(req.headers.cookie);
  if (session === undefined) return sendHtml(res, 200, signedOutPage(signIn.oidc.settings.issuer.href));
  const { user, sessionId } = session;
  const created = signIn.flash.take(sessionId);
  const keys = await signIn.users.list(user.id);
  const usage = await keyUsageFor(signIn, user, keys);
  sendHtml(res, 200, settingsPage({ user, csrf: signIn.sessions.csrfToken(sessionId), keys, created, usage }));
}

async function createKey(r: Request): Promise<void> {
  const { session, form } = await checkedPost(r);
  const name = (form.get("name") ?? "").trim();
  // control characters would make the list unreadable; the length keeps the table sane
  if (name === "" || [...name].length > KEY_NAME_MAX || /\p{Cc}/u.test(name)) {
    throw new ApiError("invalid_form", `Give the key a name of 1 to ${KEY_NAME_MAX} characters, without control characters.`);
  }
  const { secret } = await createWithinCap(r.signIn, session.user.id, name);
  r.signIn.flash.put(session.sessionId, { name, secret });
  redirect(r.res, "/settings");
}

async function createWithinCap(signIn: SignIn, userId: number, name: string): Promise<{ secret: string }> {
  try {
    return await signIn.users.create(userId, name);
  } catch (err) {
    if (!(err instanceof KeyCapReached)) throw err;
    throw new ApiError("too_many_keys", `You already have ${err.max} live API keys, the most this gateway allows; revoke one you no longer use, then create a new one.`);
  }
}

async function confirmRevoke({ signIn, req, res, param }: Request): Promise<void> {
  const session = await requireSession(signIn, req);
  const key = await signIn.users.store.ownedKey(session.user.id, param);
  if (key === undefined || key.revokedAt !== null) throw noSuchKey();
  sendHtml(res, 200, confirmRevokePage({ user: session.user, csrf: signIn.sessions.csrfToken(session.sessionId), key }));
}

async function revokeKey(r: Request): Promise<void> {
  const { session } = await checkedPost(r);
  if (!(await r.signIn.users.revoke(session.user.id, r.param))) throw noSuchKey();
  redirect(r.res, "/settings");
}

async function beginSignIn({ signIn, res }: Request): Promise<void> {
  const { url, transaction } = await signIn.oidc.begin();
  redirect(res, url.href, [await signIn.sessions.saveLogin(transaction)]);
}

async function finishSignIn({ signIn, req, res }: Request): Promise<void> {
  const transaction = await signIn.sessions.readLogin(req.headers.cookie);
  // whatever happens next, this sign-in attempt is used up
  res.setHeader("set-cookie", signIn.sessions.clearLogin());
  if (transaction === undefined) {
    throw new ApiError("sign_in_failed", "No sign-in is in progress in this browser, or it took longer than 10 minutes; start again.");
  }
  const search = new URL(req.url ?? "", "http://callback").search;
  const claims = await signIn.oidc.finish(search, transaction);
  const userId = await signIn.users.store.upsertUser(claims);
  redirect(res, "/settings", [signIn.sessions.clearLogin(), await signIn.sessions.start(userId)]);
}

async function signOut(r: Request): Promise<void> {
  const { session } = await checkedPost(r);
  redirect(r.res, "/settings", [await r.signIn.sessions.end(session.sessionId)]);
}

async function requireSession(signIn: SignIn, req: IncomingMessage): Promise<SignedIn> {
  const session = await signIn.sessions.read(req.headers.cookie);
  if (session === undefined) throw new ApiError("sign_in_required", "You are not signed in, or your session has ended; sign in again.");
  return session;
}

/** A form post from this gateway's own page, by a signed-in user, carrying that session's CSRF token. */
async function checkedPost({ signIn, req }: Request): Promise<{ session: SignedIn; form: URLSearchParams }> {
  const origin = req.headers.origin;
  const crossSite = req.headers["sec-fetch-site"] === "cross-site";
  if (crossSite || (origin !== undefined && origin !== signIn.oidc.settings.publicUrl.origin)) {
    throw new ApiError("csrf_failed", "This form was sent from another site; use the settings page itself.");
  }
  const session = await requireSession(signIn, req);
  const form = await readForm(req);
  if (!signIn.sessions.checkCsrf(session.sessionId, form.get("csrf") ?? undefined)) {
    throw new ApiError("csrf_failed", "The form's security token is missing or stale; reload the settings page and try again.");
  }
  return { session, form };
}

const noSuchKey = () => new ApiError("key_not_found", "You have no such live key.");
