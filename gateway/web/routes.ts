// The settings pages' routes (`/settings`, `/auth/*`): sign-in through OIDC, list, create and revoke one's
// own keys. Every post needs a live session, a same-origin request and the session's CSRF token, and every
// key is looked up together with its owner, so no one can reach another user's keys.
import type { IncomingMessage, ServerResponse } from "node:http";
import { ApiError } from "../../src/errors.ts";
import { sendBody, sendError } from "../http/respond.ts";
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

interface Request {
  signIn: SignIn;
  req: IncomingMessage;
  res: ServerResponse;
  param: string;
}

type PageHandler = (r: Request) => Promise<void>;

interface PageRoute {
  name: string;
  pattern: RegExp;
  methods: Record<string, PageHandler>;
}

const KEY_PATH = /^\/settings\/keys\/(key_[0-9a-f]{24})\/revoke$/;

const PAGE_ROUTES: PageRoute[] = [
  { name: "/settings", pattern: /^\/settings\/?$/, methods: { GET: showSettings } },
  { name: "/settings/keys", pattern: /^\/settings\/keys$/, methods: { POST: createKey } },
  { name: "/settings/usage", pattern: /^\/settings\/usage$/, methods: { GET: ({ signIn, req, res }) => showOperatorUsage(signIn, req, res) } },
  { name: "/settings/keys/{id}/revoke", pattern: KEY_PATH, methods: { GET: confirmRevoke, POST: revokeKey } },
  { name: "/auth/login", pattern: /^\/auth\/login$/, methods: { GET: beginSignIn } },
  { name: "/auth/callback", pattern: /^\/auth\/callback$/, methods: { GET: finishSignIn } },
  { name: "/auth/logout", pattern: /^\/auth\/logout$/, methods: { POST: signOut } },
];

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
  const asset = ASSETS[path];
  if (asset !== undefined && (method === "GET" || method === "HEAD")) {
    return {
      name: "/settings/assets/{file}",
      // node sends no body in answer to HEAD, only the length it would have had
      serve: async (_req, res) => sendBody(res, 200, asset.type, asset.body, { "cache-control": "max-age=3600" }),
    };
  }
  const route = PAGE_ROUTES.find((r) => r.pattern.test(path));
  if (route === undefined) throw new ApiError("route_not_found", `There is no page at ${path}.`);
  const handler = route.methods[method];
  if (handler === undefined) {
    res.setHeader("allow", Object.keys(route.methods).join(", "));
    throw new ApiError("method_not_allowed", `${method} is not allowed on ${route.name}.`);
  }
  const param = KEY_PATH.exec(path)?.[1] ?? "";
  return {
    name: route.name,
    serve: async (req, res) => {
      if (signIn !== undefined) return handler({ signIn, req, res, param });
      // a script sending a key reads /settings/usage as JSON (docs/operator-guide.md "Usage"): the envelope, not a page
      if (route.name === "/settings/usage" && req.headers.authorization !== undefined) {
        return sendError(req, res, new ApiError("sign_in_not_configured", "Sign-in is not configured on this gateway, and without it no usage is counted: start it with --oidc-issuer."));
      }
      if (route.name !== "/settings") throw new ApiError("sign_in_not_configured", "Sign-in is not configured on this gateway.");
      sendHtml(res, 200, notConfiguredPage());
    },
  };
}

async function showSettings({ signIn, req, res }: Request): Promise<void> {
  const session = await signIn.sessions.read(req.headers.cookie);
  if (session === undefined) return sendHtml(res, 200, signedOutPage(signIn.oidc.settings.issuer.href));
  const { user, sessionId } = session;
  const created = signIn.flash.take(sessionId);
  const keys = signIn.users.list(user.id);
  const usage = keyUsageFor(signIn, user, keys);
  sendHtml(res, 200, settingsPage({ user, csrf: signIn.sessions.csrfToken(sessionId), keys, created, usage }));
}

async function createKey(r: Request): Promise<void> {
  const { session, form } = await checkedPost(r);
  const name = (form.get("name") ?? "").trim();
  // control characters would make the list unreadable; the length keeps the table sane
  if (name === "" || [...name].length > KEY_NAME_MAX || /\p{Cc}/u.test(name)) {
    throw new ApiError("invalid_form", `Give the key a name of 1 to ${KEY_NAME_MAX} characters, without control characters.`);
  }
  const { secret } = r.signIn.users.create(session.user.id, name);
  r.signIn.flash.put(session.sessionId, { name, secret });
  redirect(r.res, "/settings");
}

async function confirmRevoke({ signIn, req, res, param }: Request): Promise<void> {
  const session = await requireSession(signIn, req);
  const key = signIn.users.store.ownedKey(session.user.id, param);
  if (key === undefined || key.revokedAt !== null) throw noSuchKey();
  sendHtml(res, 200, confirmRevokePage({ user: session.user, csrf: signIn.sessions.csrfToken(session.sessionId), key }));
}

async function revokeKey(r: Request): Promise<void> {
  const { session } = await checkedPost(r);
  if (!r.signIn.users.revoke(session.user.id, r.param)) throw noSuchKey();
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
  const userId = signIn.users.store.upsertUser(claims);
  redirect(res, "/settings", [signIn.sessions.clearLogin(), await signIn.sessions.start(userId)]);
}

async function signOut(r: Request): Promise<void> {
  const { session } = await checkedPost(r);
  redirect(r.res, "/settings", [r.signIn.sessions.end(session.sessionId)]);
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
