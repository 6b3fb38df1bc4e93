// The settings pages' only static files: a small stylesheet and the copy button's script. Served from
// memory with their own paths so the pages can run under a CSP with no inline code.

const CSS = `:root { color-scheme: light dark; font-family: system-ui, sans-serif; line-height: 1.5; }
body { max-width: 60rem; margin: 0 auto; padding: 1rem; }
header { display: flex; justify-content: space-between; align-items: center; gap: 1rem; border-bottom: 1px solid #8884; }
table { border-collapse: collapse; width: 100%; margin-top: 1rem; }
caption { text-align: left; font-weight: 600; }
th, td { text-align: left; padding: .4rem .6rem; border-bottom: 1px solid #8884; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
code, input.secret { font-family: ui-monospace, monospace; }
input.secret { width: 100%; box-sizing: border-box; padding: .4rem; }
.new-key { border: 2px solid #c80; padding: 0 1rem 1rem; margin: 1rem 0; }
.warning { font-weight: 600; }
button, .button { font: inherit; padding: .3rem .8rem; cursor: pointer; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
:focus-visible { outline: 3px solid #36f; outline-offset: 2px; }
.key-usage { margin: 1.5rem 0; }
.usage-chart { display: block; max-width: 100%; height: auto; }
.usage-chart .prompt, .swatch.prompt { fill: #3a6ea5; background: #3a6ea5; }
.usage-chart .completion, .swatch.completion { fill: #e0892b; background: #e0892b; }
.usage-chart .requests, .swatch.requests { fill: #4a9a5b; background: #4a9a5b; }
.usage-chart .hit { fill: transparent; }
.usage-chart .day:hover .hit { fill: #8882; }
.usage-chart line.axis { stroke: #8888; }
.usage-chart text.axis { fill: currentColor; font-size: 11px; }
#usage-by-provider code { word-break: break-all; }
.swatch { display: inline-block; width: .8em; height: .8em; vertical-align: middle; }
`;

const COPY_JS = `document.addEventListener("click", async (event) => {
  const button = event.target instanceof Element ? event.target.closest("[data-copy]") : null;
  if (!button) return;
  const field = document.getElementById(button.getAttribute("data-copy"));
  const status = document.getElementById(button.getAttribute("aria-describedby"));
  try {
    await navigator.clipboard.writeText(field.value);
    status.textContent = "Copied to the clipboard.";
  } catch {
    field.select();
    status.textContent = "Selected: press Ctrl+C (or Cmd+C) to copy.";
  }
});
`;

export const ASSETS: Record<string, { type: string; body: string }> = {
  "/settings/assets/settings.css": { type: "text/css; charset=utf-8", body: CSS },
  "/settings/assets/settings.js": { type: "text/javascript; charset=utf-8", body: COPY_JS },
};
