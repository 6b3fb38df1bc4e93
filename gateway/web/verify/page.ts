// The public page /verify (no sign-in, no key): paste or drop a saved response or SSE transcript and see its
// receipt checked in the browser by the bundled verifier. Its CSP lets the page run only its own script and
// send nothing: no fetch, no form post, so what is pasted never leaves the browser.
import type { ServerResponse } from "node:http";
import type { Catalog } from "../../../src/catalog.ts";
import { readable, Router } from "../../http/router.ts";
import { besideSource, bundledOnce } from "../bundle.ts";
import { html } from "../html.ts";
import { sendHtml, sendPageAsset } from "../respond.ts";
import type { ResolvedPage } from "../routes.ts";
import type { ModelPin } from "./report.ts";

export const VERIFY_PATH = "/verify";
// the page's script with the portable verifier: the page runs the verifier the gateway itself runs
const verifierScript = bundledOnce(besideSource("./client", import.meta.url));
const SCRIPT_PATH = "/verify/assets/verify.js";
const STYLE_PATH = "/verify/assets/verify.css";

// the settings pages' policy, less form posts: the page's only form is handled by its script, never sent
export const VERIFY_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

const CSS = `#saved { width: 100%; box-sizing: border-box; font-family: ui-monospace, monospace; }
#saved.dropping { outline: 3px dashed #36f; }
fieldset { margin: 1rem 0; border: 1px solid #8884; }
fieldset input { width: 100%; box-sizing: border-box; font-family: ui-monospace, monospace; margin-bottom: .5rem; }
#verdict[data-status=valid] { color: #080; }
#verdict[data-status=invalid] { color: #c00; }
#verdict[data-status=unverified] { color: #a60; }
#checks li { margin: .3rem 0; overflow-wrap: anywhere; }
#checks li[data-result=fail] strong { color: #c00; }
#checks li[data-result="not checked"] { opacity: .75; }
`;

export const isVerifyPath = (path: string): boolean => path === VERIFY_PATH || path.startsWith(`${VERIFY_PATH}/`);

type Serve = (res: ServerResponse, catalog: Catalog) => Promise<void>;

const page: Serve = async (res, catalog) => sendHtml(res, 200, verifyPage(catalog), { "content-security-policy": VERIFY_CSP });
const script: Serve = async (res) => sendPageAsset(res, "text/javascript; charset=utf-8", (await verifierScript()).code);
const style: Serve = async (res) => sendPageAsset(res, "text/css; charset=utf-8", CSS);

/** The page, its script and its stylesheet, each read with GET or HEAD; anything else under /verify is a 404. */
const VERIFY = new Router<Serve>(
  [
    { name: VERIFY_PATH, path: /^\/verify\/?$/, methods: readable(page) },
    { name: "/verify/assets/{file}", path: SCRIPT_PATH, methods: readable(script) },
    { name: "/verify/assets/{file}", path: STYLE_PATH, methods: readable(style) },
  ],
  (_method, path) => `There is no page at ${path}.`,
);

export function resolveVerifyPage(catalog: Catalog, method: string, path: string, res: ServerResponse): ResolvedPage {
  const { name, handler } = VERIFY.resolve(method, path, res);
  // start the bundle while the browser reads the page; the script's own request reports a failed build
  if (name === VERIFY_PATH) verifierScript().catch(() => undefined);
  return { name, serve: (_req, res) => handler(res, catalog) };
}

export function verifyPage(catalog: Catalog): string {
  const pins: ModelPin[] = catalog.models.map(({ alias, hub_id, revision, sha256 }) => ({ alias, hub_id, revision, sha256 }));
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Verify a receipt · svc</title>
<link rel="stylesheet" href="/settings/assets/settings.css">
<link rel="stylesheet" href="${STYLE_PATH}">
<script src="${SCRIPT_PATH}" defer></script>
</head>
<body>
<header><p><a href="${VERIFY_PATH}">svc</a> · Verify a receipt · <a href="/chat">Chat gateway-blind</a></p></header>
<main id="main" data-pins="${JSON.stringify(pins)}">
<h1>Verify a receipt</h1>
<p>Paste or drop a response you saved from an svc gateway: a chat completion body (<code>curl … &gt; r.json</code>), a
receipt alone, or a stream's transcript (<code>curl -N … &gt; r.sse</code>). Its <code>svc_receipt</code> is checked
here, in your browser, against the content beside it; nothing you paste or drop is sent anywhere.</p>
<noscript><p class="warning">This page checks receipts with JavaScript, in your browser. Turn JavaScript on, or run
<code>npx svc-agent verify FILE</code>.</p></noscript>
<form id="verify-form">
<label for="saved">Saved response or SSE transcript</label>
<textarea id="saved" rows="12" spellcheck="false" autocomplete="off"></textarea>
<p><label for="saved-file">Or choose a file:</label> <input id="saved-file" type="file" accept=".json,.sse,.txt,application/json,text/plain,text/event-stream"></p>
<fieldset>
<legend>Optional: what you know apart from the file</legend>
<p>Without the provider's id or key the answer can be at best <em>unverified</em>: anyone can make a key and sign
a receipt that holds together.</p>
<label for="provider-id">Provider id (64 hex characters, from <code>GET /v1/providers</code>)</label>
<input id="provider-id" autocomplete="off" spellcheck="false">
<label for="signing-key">Or the provider's Ed25519 signing key (64 hex characters)</label>
<input id="signing-key" autocomplete="off" spellcheck="false">
<label for="client-nonce">The <code>x-svc-receipt-nonce</code> you sent, if any</label>
<input id="client-nonce" autocomplete="off" spellcheck="false">
</fieldset>
<button type="submit">Verify</button>
</form>
<section id="result" aria-live="polite" hidden></section>
</main>
</body>
</html>
`.text;
}
