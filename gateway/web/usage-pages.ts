// The usage views as server-rendered HTML: each of a user's keys charted per day on the settings page, and
// the operator's page of totals per user and per provider. Pure functions from a view to markup.
import type { KeyRecord, UsageCounts, User } from "../keys/key-store.ts";
import { sumCounts, USAGE_DAYS, type DayCounts } from "../keys/usage.ts";
import { html, type Html } from "./html.ts";
import { page, when } from "./pages.ts";
import { describeDay, usageChart } from "./usage-chart.ts";

const number = (n: number) => n.toLocaleString("en-US");

const legend = html`<p class="legend"><span class="swatch prompt"></span> prompt tokens
<span class="swatch completion"></span> completion tokens <span class="swatch requests"></span> requests.
Days are UTC; counts come from verified receipts.</p>`;

/** The window's totals in words, each number also as a data attribute for exact reading. */
function summary(counts: UsageCounts): Html {
  return html`<span data-total="requests" data-value="${counts.requests}">${number(counts.requests)}</span> requests,
<span data-total="prompt-tokens" data-value="${counts.promptTokens}">${number(counts.promptTokens)}</span> prompt +
<span data-total="completion-tokens" data-value="${counts.completionTokens}">${number(counts.completionTokens)}</span> completion tokens`;
}

/** The days with any use, as a table: the chart's numbers for those who cannot see it. */
function dayTable(days: readonly DayCounts[], caption: string): Html {
  const used = days.filter((d) => d.requests > 0);
  if (used.length === 0) return html``;
  return html`<details><summary>${caption}</summary><ul class="days">
${used.map((d) => html`<li>${describeDay(d)}</li>`)}
</ul></details>`;
}

function keyUsage(key: KeyRecord, days: readonly DayCounts[] | undefined): Html {
  const counts = days === undefined ? sumCounts([]) : sumCounts(days);
  const id = `usage-${key.id}`;
  return html`<article class="key-usage" data-key-id="${key.id}" aria-labelledby="${id}">
<h3 id="${id}">${key.name} <code>${key.prefix}</code>${key.revokedAt === null ? "" : " (revoked)"}</h3>
<p class="usage-summary">Last ${USAGE_DAYS} days: ${summary(counts)}. Last used: <span data-last-used>${when(key.lastUsedAt)}</span>.</p>
${days === undefined || counts.requests === 0
  ? html`<p>Not used in the last ${USAGE_DAYS} days.</p>`
  : html`${usageChart(days, `${key.name}: requests and tokens per day, last ${USAGE_DAYS} days`)}
${dayTable(days, `Days ${key.name} was used`)}`}
</article>`;
}

/** The settings page's usage section: one chart per key, newest key first, as the list above. */
export function keyUsageSection(view: { keys: readonly KeyRecord[]; series: ReadonlyMap<string, DayCounts[]>; admin: boolean }): Html {
  // an admin with no keys of their own still needs the way to everyone's usage
  const everyone = view.admin ? html`<p><a href="/settings/usage">Every user's and provider's usage</a> (you are an operator)</p>` : "";
  if (view.keys.length === 0) return html`${everyone}`;
  return html`<section class="usage" aria-labelledby="usage-title">
<h2 id="usage-title">Usage, last ${USAGE_DAYS} days</h2>
${legend}
${everyone}
${view.keys.map((key) => keyUsage(key, view.series.get(key.id)))}
</section>`;
}

export interface UserTotal {
  /** Who: the user's email or name, or the operator keys' line. */
  label: string;
  keys: number;
  counts: UsageCounts;
  /** The latest use of any of the user's keys; null for operator keys, whose use is recorded only per day. */
  lastUsedAt: number | null;
  /** The last UTC day with use in the window. */
  lastDay: string;
}

export interface OperatorUsageView {
  signedIn?: { user: User; csrf: string };
  window: readonly string[];
  /** Every key's use summed per day. */
  total: readonly DayCounts[];
  users: readonly UserTotal[];
  providers: readonly { providerId: string; counts: UsageCounts }[];
}

const countCells = (c: UsageCounts) =>
  html`<td class="number">${number(c.requests)}</td><td class="number">${number(c.promptTokens)}</td><td class="number">${number(c.completionTokens)}</td>`;

const countHeads = html`<th scope="col">Requests</th><th scope="col">Prompt tokens</th><th scope="col">Completion tokens</th>`;

export function operatorUsagePage(view: OperatorUsageView): string {
  const users = view.users.length === 0
    ? html`<p>No key was used in these days.</p>`
    : html`<table id="usage-by-user">
<caption>Per user (keys used in these days)</caption>
<thead><tr><th scope="col">User</th><th scope="col">Keys</th>${countHeads}<th scope="col">Last used</th></tr></thead>
<tbody>
${view.users.map((u) => html`<tr><th scope="row">${u.label}</th><td class="number">${u.keys}</td>${countCells(u.counts)}<td>${u.lastUsedAt === null ? `on ${u.lastDay}` : when(u.lastUsedAt)}</td></tr>`)}
</tbody>
</table>`;
  const providers = view.providers.length === 0
    ? html``
    : html`<table id="usage-by-provider">
<caption>Per provider</caption>
<thead><tr><th scope="col">Provider</th>${countHeads}</tr></thead>
<tbody>
${view.providers.map((p) => html`<tr><th scope="row"><code>${p.providerId}</code></th>${countCells(p.counts)}</tr>`)}
</tbody>
</table>`;
  return page(
    { title: "Usage", ...(view.signedIn ? { signedIn: view.signedIn } : {}) },
    html`<p>Every key's use of this gateway, ${view.window[0]} to ${view.window.at(-1)} (UTC): ${summary(sumCounts(view.total))}.</p>
${legend}
${usageChart(view.total, `All keys: requests and tokens per day, last ${USAGE_DAYS} days`)}
${users}
${providers}
<p><a href="/settings">Back to API keys</a></p>`,
  );
}
