// The settings pages as server-rendered HTML: plain forms and links that work without JavaScript, labelled
// controls, one <main>, and a table with a caption. Pure functions from a view to markup.
import type { KeyRecord, User } from "../keys/key-store.ts";
import { html, type Html } from "./html.ts";
import type { NewKey } from "./new-key-flash.ts";

export const KEY_NAME_MAX = 64;

export interface Chrome {
  title: string;
  /** Shown in the header with a sign-out button when someone is signed in. */
  signedIn?: { user: User; csrf: string };
}

/** Every page's frame: head, header with who is signed in, one <main>; usage-pages.ts shares it. */
export function page({ title, signedIn }: Chrome, body: Html): string {
  const who = signedIn ? (signedIn.user.email ?? signedIn.user.name ?? `user ${signedIn.user.id}`) : undefined;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · svc</title>
<link rel="stylesheet" href="/settings/assets/settings.css">
<script src="/settings/assets/settings.js" defer></script>
</head>
<body>
<header>
<p><a href="/settings">svc</a> · API keys</p>
${signedIn
  ? html`<form method="post" action="/auth/logout"><span>Signed in as <strong>${who}</strong></span>
<input type="hidden" name="csrf" value="${signedIn.csrf}"> <button type="submit">Sign out</button></form>`
  : ""}
</header>
<main id="main">
<h1>${title}</h1>
${body}
</main>
</body>
</html>
`.text;
}

export function notConfiguredPage(): string {
  return page(
    { title: "API keys" },
    html`<p>Sign-in is not configured on this gateway, so no one can create API keys here.</p>
<p>Operator keys work (the ones set in <code>SVC_OPERATOR_KEYS</code> when the gateway started, a different product
that cannot be made on this page), and so do the user keys already in the key store, such as those the operator makes
with <code>svc-gateway keys create</code>.</p>
<p>To let people sign in and create their own <code>sk-svc_</code> keys, start the gateway with
<code>--oidc-issuer</code>, <code>--oidc-client-id</code> and <code>--public-url</code> (see docs/operator-guide.md).</p>`,
  );
}

export function signedOutPage(issuer: string): string {
  return page(
    { title: "API keys" },
    html`<p>Sign in to create and manage your API keys.</p>
<p><a class="button" href="/auth/login">Sign in</a> with ${new URL(issuer).host}</p>`,
  );
}

export interface SettingsView {
  user: User;
  csrf: string;
  keys: KeyRecord[];
  /** Keys made a moment ago: the only time their secrets are ever shown. */
  created: NewKey[];
  /** Each key's use per day (usage-pages.ts), shown under the list. */
  usage?: Html;
}

export const when = (ms: number | null) => (ms === null ? "never" : `${new Date(ms).toISOString().slice(0, 16).replace("T", " ")} UTC`);

function keyRow(key: KeyRecord): Html {
  const tokens = key.promptTokens + key.completionTokens;
  return html`<tr>
<td>${key.name}</td><td><code>${key.prefix}</code></td><td>${when(key.createdAt)}</td><td>${when(key.lastUsedAt)}</td>
<td class="number">${key.requests}</td>
<td class="number" title="${key.promptTokens} prompt + ${key.completionTokens} completion">${tokens}</td>
<td>${key.revokedAt === null
  ? html`<a href="/settings/keys/${key.id}/revoke" aria-label="Revoke ${key.name}">Revoke…</a>`
  : html`Revoked ${when(key.revokedAt)}`}</td>
</tr>`;
}

function newKeySection({ name, secret }: NewKey, i: number): Html {
  const id = i === 0 ? "new-secret" : `new-secret-${i}`;
  return html`<section class="new-key" aria-labelledby="${id}-title">
<h2 id="${id}-title">Your new key “${name}”</h2>
<p class="warning" role="alert">Copy this secret now. It is shown only this once: svc keeps only a hash of it and
cannot show it again. If you lose it, revoke the key and create another.</p>
<label for="${id}">Secret</label>
<input id="${id}" class="secret" readonly value="${secret}" autocomplete="off" spellcheck="false">
<p><button type="button" data-copy="${id}" aria-describedby="${id}-status">Copy</button>
<span id="${id}-status" role="status"></span></p>
</section>`;
}

export function settingsPage(view: SettingsView): string {
  const table = view.keys.length === 0
    ? html`<p>You have no API keys yet.</p>`
    : html`<table>
<caption>Your API keys (usage counts completions with verified receipts)</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">Created</th><th scope="col">Last used</th>
<th scope="col">Requests</th><th scope="col">Tokens</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>
${view.keys.map(keyRow)}
</tbody>
</table>`;
  return page(
    { title: "API keys", signedIn: view },
    html`${view.created.map(newKeySection)}
<form method="post" action="/settings/keys">
<input type="hidden" name="csrf" value="${view.csrf}">
<label for="key-name">Name for a new key</label>
<input id="key-name" name="name" required maxlength="${KEY_NAME_MAX}" placeholder="laptop">
<button type="submit">Create key</button>
</form>
${table}
${view.usage}`,
  );
}

export function confirmRevokePage(view: { user: User; csrf: string; key: KeyRecord }): string {
  const { key } = view;
  return page(
    { title: "Revoke key", signedIn: view },
    html`<p>Revoke the key “${key.name}” (<code>${key.prefix}</code>)? Every request that uses it is refused from the
next one on. This cannot be undone.</p>
<form method="post" action="/settings/keys/${key.id}/revoke">
<input type="hidden" name="csrf" value="${view.csrf}">
<button type="submit">Revoke key</button> <a href="/settings">Cancel</a>
</form>`,
  );
}

export function errorPage(message: string): string {
  return page({ title: "Something went wrong" }, html`<p role="alert">${message}</p><p><a href="/settings">Back to API keys</a></p>`);
}
