// Test-only faults for an agent (`svc-agent start --test-fault …`), so black-box tests can make a real
// provider slow or make it fail mid-stream.

export interface Faults {
  /** Pause after each delta, as a slow machine would. */
  tokenDelayMs?: number;
  /** Fail the session after this many deltas. */
  failAfterDeltas?: number;
}

/** `token-delay-ms=50,fail-after=3`. */
export function parseFaults(spec: string): Faults {
  const faults: Faults = {};
  for (const part of spec.split(",").filter(Boolean)) {
    const [name, raw] = part.split("=");
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 0) throw new Error(`--test-fault ${part}: expected NAME=non-negative integer`);
    if (name === "token-delay-ms") faults.tokenDelayMs = value;
    else if (name === "fail-after") faults.failAfterDeltas = value;
    else throw new Error(`--test-fault ${part}: unknown fault (token-delay-ms, fail-after)`);
  }
  return faults;
}
