// The one machine-readable line a long-running command prints once it is up (docs/operator-guide.md "The ready
// line"): a JSON object on stdout whose `ready` names the command, with the addresses a script needs. Scripts and
// the test harness wait for it; the human banner around it may change wording at any time.
import type { TrustLevel } from "../receipt/rungs.ts";

export type ReadyLine =
  /** `svc-gateway serve`, listening: origins, without /v1. */
  | { ready: "svc-gateway serve"; gateway: string; coordinator: string }
  /** `svc-gateway coordinator`, listening. */
  | { ready: "svc-gateway coordinator"; coordinator: string }
  /** `svc-agent start`, admitted and advertising for the first time since it started. */
  | { ready: "svc-agent start"; provider: string; rung: TrustLevel; aliases: string[]; coordinator: string };

export type ReadyCommand = ReadyLine["ready"];

/** The line itself, without its newline. */
export const readyLine = (line: ReadyLine): string => JSON.stringify(line);
