// The text of server-sent events as every svc stream frames them (SPEC §3): `data: <json>` (named for the Responses
// API's events), a `: keepalive` comment, `data: [DONE]`. One framing for whoever writes the stream.

export const KEEPALIVE_LINE = ": keepalive\n\n";
export const DONE_LINE = "data: [DONE]\n\n";
export const DEFAULT_KEEPALIVE_MS = 10_000;

export const sseData = (value: unknown): string => `data: ${JSON.stringify(value)}\n\n`;

/** One event: its name line when it has a name, then its data. */
export const sseEvent = (value: unknown, event?: string): string => `${event === undefined ? "" : `event: ${event}\n`}${sseData(value)}`;
