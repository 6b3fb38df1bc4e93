// A small server-rendered SVG bar chart of requests and prompt/completion tokens per day: no script, no
// library, styled by classes in settings.css (the pages' CSP allows no inline style). Each day's numbers are
// also on its bar as data-* attributes and a <title> tooltip, so they can be read without the picture.
import type { DayCounts } from "../keys/usage.ts";
import { html, type Html } from "./html.ts";

const WIDTH = 600;
const TOKENS_TOP = 16;
const TOKENS_HEIGHT = 100;
const REQUESTS_TOP = TOKENS_TOP + TOKENS_HEIGHT + 22;
const REQUESTS_HEIGHT = 40;
const HEIGHT = REQUESTS_TOP + REQUESTS_HEIGHT + 18;

/** A bar's height in whole tenths of a unit, so the markup stays short; a non-zero value is never invisible. */
function scale(value: number, max: number, height: number): number {
  if (value === 0) return 0;
  return Math.max(0.5, Math.round((value / max) * height * 10) / 10);
}

const plural = (n: number, one: string, many: string) => `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`;

export const describeDay = (d: DayCounts): string =>
  `${d.day}: ${plural(d.requests, "request", "requests")}, ${d.promptTokens.toLocaleString("en-US")} prompt + ${d.completionTokens.toLocaleString("en-US")} completion tokens`;

/** One day's bars: prompt tokens with completion tokens stacked on them, and requests in the panel below. */
function dayBars(d: DayCounts, i: number, slot: number, maxTokens: number, maxRequests: number): Html {
  const x = Math.round(i * slot * 10) / 10;
  const w = Math.max(1, Math.round((slot - 2) * 10) / 10);
  const prompt = scale(d.promptTokens, maxTokens, TOKENS_HEIGHT);
  const completion = scale(d.completionTokens, maxTokens, TOKENS_HEIGHT);
  const requests = scale(d.requests, maxRequests, REQUESTS_HEIGHT);
  const base = TOKENS_TOP + TOKENS_HEIGHT;
  return html`<g class="day" data-day="${d.day}" data-requests="${d.requests}" data-prompt-tokens="${d.promptTokens}" data-completion-tokens="${d.completionTokens}">
<title>${describeDay(d)}</title>
<rect class="hit" x="${x}" y="${TOKENS_TOP}" width="${w}" height="${REQUESTS_TOP + REQUESTS_HEIGHT - TOKENS_TOP}"/>
${prompt > 0 ? html`<rect class="prompt" x="${x}" y="${base - prompt}" width="${w}" height="${prompt}"/>` : ""}
${completion > 0 ? html`<rect class="completion" x="${x}" y="${base - prompt - completion}" width="${w}" height="${completion}"/>` : ""}
${requests > 0 ? html`<rect class="requests" x="${x}" y="${REQUESTS_TOP + REQUESTS_HEIGHT - requests}" width="${w}" height="${requests}"/>` : ""}
</g>`;
}

/** The chart for a series of days (oldest first); `label` names it for screen readers. */
export function usageChart(days: readonly DayCounts[], label: string): Html {
  const maxTokens = Math.max(1, ...days.map((d) => d.promptTokens + d.completionTokens));
  const maxRequests = Math.max(1, ...days.map((d) => d.requests));
  const slot = WIDTH / Math.max(1, days.length);
  const first = days[0]?.day ?? "";
  const last = days.at(-1)?.day ?? "";
  return html`<svg class="usage-chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" role="img" aria-label="${label}" data-max-tokens="${maxTokens}" data-max-requests="${maxRequests}">
<text class="axis" x="0" y="11">tokens per day (top ${maxTokens.toLocaleString("en-US")})</text>
<line class="axis" x1="0" y1="${TOKENS_TOP + TOKENS_HEIGHT + 0.5}" x2="${WIDTH}" y2="${TOKENS_TOP + TOKENS_HEIGHT + 0.5}"/>
<text class="axis" x="0" y="${REQUESTS_TOP - 5}">requests per day (top ${maxRequests.toLocaleString("en-US")})</text>
<line class="axis" x1="0" y1="${REQUESTS_TOP + REQUESTS_HEIGHT + 0.5}" x2="${WIDTH}" y2="${REQUESTS_TOP + REQUESTS_HEIGHT + 0.5}"/>
${days.map((d, i) => dayBars(d, i, slot, maxTokens, maxRequests))}
<text class="axis" x="0" y="${HEIGHT - 4}">${first}</text>
<text class="axis" x="${WIDTH}" y="${HEIGHT - 4}" text-anchor="end">${last} (UTC)</text>
</svg>`;
}
