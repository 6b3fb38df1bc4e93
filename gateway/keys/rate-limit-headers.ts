// OpenAI's rate-limit headers (`x-ratelimit-{limit,remaining,reset}-{requests,tokens}`), so SDKs and tools
// that read them work unchanged; reset times are written as OpenAI writes them: `20ms`, `1.5s`, `6m0s`.
import type { LimitState, Quota } from "./rate-limits.ts";

/** A duration as Go prints one (OpenAI's format), rounded up to the millisecond so it never promises early. */
export function formatReset(ms: number): string {
  const total = Math.max(0, Math.ceil(ms));
  if (total === 0) return "0s";
  if (total < 1000) return `${total}ms`;
  const hours = Math.floor(total / 3_600_000);
  const minutes = Math.floor((total % 3_600_000) / 60_000);
  const seconds = `${((total % 60_000) / 1000).toFixed(3).replace(/\.?0+$/, "")}s`;
  if (hours > 0) return `${hours}h${minutes}m${seconds}`;
  return minutes > 0 ? `${minutes}m${seconds}` : seconds;
}

/** The headers for each configured per-minute limit; none for an unlimited one. */
export function rateLimitHeaders(state: LimitState): Record<string, string> {
  const headers: Record<string, string> = {};
  const add = (kind: "requests" | "tokens", quota: Quota | undefined) => {
    if (quota === undefined) return;
    headers[`x-ratelimit-limit-${kind}`] = String(quota.limit);
    headers[`x-ratelimit-remaining-${kind}`] = String(quota.remaining);
    headers[`x-ratelimit-reset-${kind}`] = formatReset(quota.resetMs);
  };
  add("requests", state.requests);
  add("tokens", state.tokens);
  return headers;
}
