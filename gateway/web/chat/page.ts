// The public page /chat (issue 42 item 7): a small chat box that talks gateway-blind from the browser, through the
// client's own bundle (createSealedFetch), so that a person can watch the mode work without installing anything.
// The key stays in the page's memory; the trust policy is pre-filled from this gateway's but is the user's to edit.
import { existsSync } from "node:fs";
import type { ServerResponse } from "node:http";
import { fileURLToPath } from "node:url";
import { kindOf, type Catalog } from "../../../src/catalog.ts";
import { TRUST_LEVELS, type TrustLevel } from "../../../src/receipt/rungs.ts";
import type { TrustAnchors } from "../../../src/trust/attestation.ts";
import { readable, Router } from "../../http/router.ts";
import { besideSource, bundledOnce, fileOnce, type Script } from "../bundle.ts";
import { html } from "../html.ts";
import { sendHtml, sendPageAsset } from "../respond.ts";
import type { ResolvedPage } from "../routes.ts";
import { VERIFY_CSP, VERIFY_PATH } from "../verify/page.ts";

export const CHAT_PATH = "/chat";
const CLIENT_PATH = "/chat/assets/svc-client.js";
const SCRIPT_PATH = "/chat/assets/chat.js";
const STYLE_PATH = "/chat/assets/chat.css";

/**
 * The client as a browser gets it; the page's script imports it from CLIENT_PATH. Compiled, it is the package's own
 * dist/client/browser.js; from sources, the same esbuild build of client/index.ts: either way the bytes npm's
 * svc-agent-client ships as dist/browser.js, so a reader can hold the page's hash to the tarball's.
 */
const SHIPPED_CLIENT = fileURLToPath(new URL("../../../client/browser.js", import.meta.url));
const clientScript = existsSync(SHIPPED_CLIENT) ? fileOnce(SHIPPED_CLIENT) : bundledOnce(besideSource("../../../client/index", import.meta.url), "esm");
const pageScript = bundledOnce(besideSource("./client", import.meta.url), "esm", { [besideSource("../../../client/index", import.meta.url)]: CLIENT_PATH });

// /verify's policy, and the page's script may fetch from this origin, where the gateway relays sealed bytes
const CHAT_CSP = `${VERIFY_CSP}; connect-src 'self'`;

const CSS = `fieldset { margin: 1rem 0; border: 1px solid #8884; }
textarea, input, select { width: 100%; box-sizing: border-box; margin-bottom: .5rem; }
textarea.pem, #client-sha256 { font-family: ui-monospace, monospace; font-size: .85em; overflow-wrap: anywhere; }
#answer { white-space: pre-wrap; border: 1px solid #8884; padding: .5rem; min-height: 3rem; }
#verdict[data-status=valid] { color: #080; }
#verdict[data-status=invalid], #failure { color: #c00; }
#verdict[data-status=unverified] { color: #a60; }
`;

/** What the page offers before the user changes anything: this gateway's aliases, floor and anchors. */
export interface ChatDefaults {
  catalog: Catalog;
  floor: TrustLevel;
  anchors: TrustAnchors;
}

export const isChatPath = (path: string): boolean => path === CHAT_PATH || path.startsWith(`${CHAT_PATH}/`);

type Serve = (res: ServerResponse, defaults: ChatDefaults) => Promise<void>;

const page: Serve = async (res, defaults) => {
  const [client, script] = await Promise.all([clientScript(), pageScript()]);
  sendHtml(res, 200, chatPage(defaults, client, script), { "content-security-policy": CHAT_CSP });
};
const javascript = (bundle: () => Promise<Script>): Serve => async (res) => sendPageAsset(res, "text/javascript; charset=utf-8", (await bundle()).code);

/** The page, the client, the page's script and its stylesheet, each read with GET or HEAD; anything else under /chat is a 404. */
const CHAT = new Router<Serve>(
  [
    { name: CHAT_PATH, path: /^\/chat\/?$/, methods: readable(page) },
    { name: "/chat/assets/{file}", path: CLIENT_PATH, methods: readable(javascript(clientScript)) },
    { name: "/chat/assets/{file}", path: SCRIPT_PATH, methods: readable(javascript(pageScript)) },
    { name: "/chat/assets/{file}", path: STYLE_PATH, methods: readable(async (res) => sendPageAsset(res, "text/css; charset=utf-8", CSS)) },
  ],
  (_method, path) => `There is no page at ${path}.`,
);

export function resolveChatPage(defaults: ChatDefaults, method: string, path: string, res: ServerResponse): ResolvedPage {
  const { name, handler } = CHAT.resolve(method, path, res);
  return { name, serve: (_req, res) => handler(res, defaults) };
}

/** Subresource integrity: the browser runs a script only if it has the SHA-256 the page names. */
const integrity = (script: Script) => `sha256-${Buffer.from(script.sha256, "hex").toString("base64")}`;

export function chatPage({ catalog, floor, anchors }: ChatDefaults, client: Script, script: Script): string {
  const aliases = catalog.models.filter((entry) => kindOf(entry) === "chat").map((entry) => entry.alias);
  const roots = anchors.roots.map((root) => root.toString("pem")).join("\n");
  const releaseKeys = [...anchors.releaseKeys].join("\n");
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Chat gateway-blind · svc</title>
<link rel="stylesheet" href="/settings/assets/settings.css">
<link rel="stylesheet" href="${STYLE_PATH}">
<link rel="modulepreload" href="${CLIENT_PATH}" integrity="${integrity(client)}">
<script type="module" src="${SCRIPT_PATH}" integrity="${integrity(script)}"></script>
</head>
<body>
<header><p><a href="${VERIFY_PATH}">svc</a> · Chat gateway-blind</p></header>
<main id="main" data-catalog="${JSON.stringify(catalog)}">
<h1>Chat gateway-blind</h1>
<p>Your prompt is sealed here, in your browser, to providers whose attestation this page checks against the trust
policy below; the gateway relays the sealed bytes without a key to open them, and the answer is opened and its
receipt checked here too. The API key stays in this page's memory: it is sent only as the bearer of your requests
and never stored.</p>
<noscript><p class="warning">This page seals requests with JavaScript, in your browser. Turn JavaScript on, or use
<code>createSealedFetch</code> from your own code (docs/api.md, "Gateway-blind requests").</p></noscript>
<form id="chat-form">
<label for="api-key">API key</label>
<input id="api-key" type="password" autocomplete="off" spellcheck="false" required>
<label for="alias">Model</label>
<select id="alias">${aliases.map((alias) => html`<option>${alias}</option>`)}</select>
<fieldset>
<legend>Trust policy (yours: pre-filled with this gateway's, edit it to your own)</legend>
<label for="floor">Lowest rung a provider's evidence must prove</label>
<select id="floor">${TRUST_LEVELS.map((level) => html`<option${level === floor ? html` selected` : ""}>${level}</option>`)}</select>
<label for="release-keys">Release keys you trust (hex, one a line), for the transparent rung</label>
<textarea id="release-keys" class="pem" rows="3" spellcheck="false" autocomplete="off">${releaseKeys}</textarea>
<label for="roots">Attestation roots you trust (PEM), for the hardware rung</label>
<textarea id="roots" class="pem" rows="4" spellcheck="false" autocomplete="off">${roots}</textarea>
</fieldset>
<label for="prompt">Prompt</label>
<textarea id="prompt" rows="4" required></textarea>
<button id="send" type="submit">Send</button>
</form>
<section id="result" aria-live="polite">
<h2>Answer</h2>
<div id="answer"></div>
<p id="failure" hidden></p>
<p><strong id="verdict"></strong></p>
<p>Provider: <code id="provider"></code></p>
</section>
<section>
<h2>The code this page runs</h2>
<p>The client is <a href="${CLIENT_PATH}">svc-client.js</a>, SHA-256 <code id="client-sha256">${client.sha256}</code>, the
<code>dist/browser.js</code> of the svc-agent-client package of this release, named in the page, so that your browser runs it only if its bytes have
that hash. This shows which client code the page uses, and lets you compare it with that file in the npm tarball. It does not protect you from this gateway: the gateway serves the page and its scripts, so a dishonest one
could serve other code, and this hash with it. Against the gateway, run the client yourself:
<code>createSealedFetch</code> from the npm package, in your own program.</p>
</section>
</main>
</body>
</html>
`.text;
}
