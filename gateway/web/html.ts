// A tagged template for HTML that escapes every interpolated value unless it is already HTML, so a key name
// or a claim from the identity provider can never become markup.
import escapeHtml from "escape-html";

export class Html {
  constructor(readonly text: string) {}
}

type Part = Html | string | number | null | undefined | false | readonly Part[];

function render(part: Part): string {
  if (part instanceof Html) return part.text;
  if (Array.isArray(part)) return part.map(render).join("");
  if (part === null || part === undefined || part === false) return "";
  return escapeHtml(String(part));
}

export function html(strings: TemplateStringsArray, ...parts: Part[]): Html {
  let out = strings[0] ?? "";
  parts.forEach((part, i) => (out += render(part) + (strings[i + 1] ?? "")));
  return new Html(out);
}
