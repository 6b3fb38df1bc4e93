// The page /verify's script, run in the browser: reads the pasted, dropped or chosen file and shows the report.
// The gateway bundles it with the verifier (bundle.ts); nothing here sends a request, and the page's CSP forbids it.
import { decodeSavedBytes } from "../../../src/receipt/index.ts";
import { byId, document, type FileLike } from "../page-dom.ts";
import { unreadableReport, verificationReport, type ModelPin, type Report } from "./report.ts";

const form = byId("verify-form");
const saved = byId("saved");
const file = byId("saved-file");
const providerId = byId("provider-id");
const signingKey = byId("signing-key");
const clientNonce = byId("client-nonce");
const result = byId("result");
// the gateway's catalog pins, written into the page so the model can be checked without asking for them
const pins = JSON.parse(byId("main").dataset.pins ?? "[]") as ModelPin[];

function show(report: Report): void {
  const heading = document.createElement("h2");
  heading.id = "verdict";
  heading.dataset.status = report.status;
  heading.textContent = report.headline;
  const list = document.createElement("ul");
  list.id = "checks";
  for (const row of report.rows) {
    const item = document.createElement("li");
    item.dataset.check = row.check;
    item.dataset.result = row.result;
    const mark = document.createElement("strong");
    mark.textContent = `${row.label}: ${row.result === "pass" ? "passed" : row.result === "fail" ? "FAILED" : "not checked"}`;
    item.append(mark, ` — ${row.words}`);
    list.append(item);
  }
  result.replaceChildren(heading, list);
  result.hidden = false;
}

function verify(): void {
  if (saved.value.trim() === "") {
    result.hidden = true;
    return;
  }
  show(verificationReport({ text: saved.value, providerId: providerId.value, signingKey: signingKey.value, clientNonce: clientNonce.value }, pins));
}

async function load(chosen: FileLike | undefined): Promise<void> {
  if (chosen === undefined) return;
  // read here, in the page: the file never leaves the browser. Its bytes, as the command line reads them: File.text()
  // would drop a byte order mark and replace invalid UTF-8, which the verifier must see to refuse
  const bytes = new Uint8Array(await chosen.arrayBuffer());
  try {
    saved.value = decodeSavedBytes(bytes);
  } catch (err) {
    saved.value = "";
    show(unreadableReport((err as Error).message));
    return;
  }
  verify();
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  verify();
});
file.addEventListener("change", () => void load(file.files?.[0]));
// a paste is a whole file arriving: check it at once; typing waits for the button
saved.addEventListener("input", (event) => {
  if (event.inputType === "insertFromPaste") verify();
});
saved.addEventListener("dragover", (event) => {
  event.preventDefault();
  saved.classList.add("dropping");
});
saved.addEventListener("dragleave", () => saved.classList.remove("dropping"));
saved.addEventListener("drop", (event) => {
  event.preventDefault();
  saved.classList.remove("dropping");
  const dropped = event.dataTransfer?.files[0];
  if (dropped !== undefined) return void load(dropped);
  saved.value = event.dataTransfer?.getData("text/plain") ?? "";
  verify();
});
