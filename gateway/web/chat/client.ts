// The page /chat's script, run in the browser: seals the prompt with the client (createSealedFetch, loaded apart as
// /chat/assets/svc-client.js), streams the opened answer into the page and shows the receipt's verdict.
import { createSealedFetch, verifySavedResponse } from "../../../client/index.ts";
import type { Catalog } from "../../../src/catalog.ts";
import type { TrustLevel } from "../../../src/receipt/rungs.ts";
import { byId, location } from "../page-dom.ts";

const form = byId("chat-form");
const send = byId("send");
const apiKey = byId("api-key");
const alias = byId("alias");
const floor = byId("floor");
const releaseKeys = byId("release-keys");
const roots = byId("roots");
const prompt = byId("prompt");
const answer = byId("answer");
const failure = byId("failure");
const verdict = byId("verdict");
const provider = byId("provider");
// the gateway's catalog: the pins a receipt's model must match
const catalog = JSON.parse(byId("main").dataset.catalog ?? "{}") as Catalog;
/** The provider that answered, from its receipt, which createSealedFetch checked against that candidate's evidence. */
let checkedProvider: string | undefined;

/** Each PEM block of the roots box (the client takes one text per root file; one text holding them all is the same). */
const rootsOf = (text: string): string[] => (text.trim() === "" ? [] : [text]);

async function chat(): Promise<void> {
  for (const element of [answer, verdict, provider, failure]) element.textContent = "";
  failure.hidden = true;
  delete verdict.dataset.status;
  const baseURL = `${location.origin}/v1`;
  const sealed = createSealedFetch({
    baseURL,
    apiKey: apiKey.value.trim(),
    floor: floor.value as TrustLevel,
    releaseKeys: [releaseKeys.value],
    trustedRoots: rootsOf(roots.value),
    catalog,
  });
  const res = await sealed(`${baseURL}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: alias.value, messages: [{ role: "user", content: prompt.value }], stream: true }),
  });
  if (res.status !== 200 || res.body === null) {
    const text = await res.text();
    let message = text;
    try {
      message = (JSON.parse(text) as { error: { message: string } }).error.message;
    } catch {
      // not an envelope: show it as it came
    }
    throw new Error(`${res.status}: ${message}`);
  }
  // the stream as the normal path frames it: show each delta as it opens, keep the transcript for the receipt check
  let transcript = "";
  let pending = "";
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    transcript += value;
    pending += value;
    const events = pending.split("\n\n");
    pending = events.pop() ?? "";
    for (const event of events) showEvent(event);
  }
  const checked = verifySavedResponse(transcript, {
    ...(checkedProvider === undefined ? {} : { providerId: checkedProvider }),
    ...modelPin(alias.value),
  });
  verdict.dataset.status = checked.status;
  verdict.textContent = checked.status === "valid"
    ? `valid: the receipt is signed by the provider whose evidence your policy accepted, for this answer and model`
    : `${checked.status}: ${checked.problems.join("; ")}`;
}

function showEvent(event: string): void {
  for (const line of event.split("\n")) {
    if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
    const chunk = JSON.parse(line.slice(6)) as { choices?: { delta?: { content?: string } }[]; svc_receipt?: { provider_id: string; trust_level: string }; error?: { message: string } };
    if (chunk.error !== undefined) throw new Error(chunk.error.message);
    answer.textContent += chunk.choices?.[0]?.delta?.content ?? "";
    if (chunk.svc_receipt !== undefined) {
      // createSealedFetch has checked this receipt against the candidate that answered, whose evidence it checked
      checkedProvider = chunk.svc_receipt.provider_id;
      provider.textContent = `${checkedProvider} (${chunk.svc_receipt.trust_level})`;
    }
  }
}

function modelPin(name: string): { model?: { alias: string; hub_id: string; revision: string; sha256: string } } {
  const entry = catalog.models.find((m) => m.alias === name);
  return entry === undefined ? {} : { model: { alias: entry.alias, hub_id: entry.hub_id, revision: entry.revision, sha256: entry.sha256 } };
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  send.disabled = true;
  checkedProvider = undefined;
  chat()
    .catch((err: unknown) => {
      failure.textContent = (err as Error).message;
      failure.hidden = false;
    })
    .finally(() => {
      send.disabled = false;
    });
});
