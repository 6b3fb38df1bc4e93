// One line of `svc-agent doctor`: what was checked, whether it passed, the fix when it did not, and whether
// the agent needs it to serve at all (only those decide the exit code).

export interface Check {
  /** Stable name for --json: `node`, `llama`, `model:qwen3-4b`, `coordinator:URL`, … */
  id: string;
  ok: boolean;
  /** A failure here means the agent cannot serve; the others only cost a model, a rung or some safety. */
  needed: boolean;
  line: string;
  fix?: string;
  /** The facts behind the line, for --json. */
  data?: Record<string, unknown>;
}

export const pass = (id: string, line: string, data?: Record<string, unknown>): Check => ({ id, ok: true, needed: true, line, ...(data ? { data } : {}) });

export const fail = (id: string, line: string, fix: string, options: { needed?: boolean; data?: Record<string, unknown> } = {}): Check => ({
  id,
  ok: false,
  needed: options.needed ?? true,
  line,
  fix,
  ...(options.data ? { data: options.data } : {}),
});

export function formatCheck(check: Check): string {
  if (check.ok) return `✓ ${check.line}`;
  return `✗ ${check.line}${check.needed ? "" : " (not needed to serve)"}; fix: ${check.fix}`;
}

/** Whether the agent can serve: every check it needs passed. */
export const readyToServe = (checks: readonly Check[]) => checks.every((c) => c.ok || !c.needed);

export const gb = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(1)} GB`;
