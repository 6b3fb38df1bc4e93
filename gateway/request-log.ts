// The one log line each request gets, which the metrics also count: never the prompt, never the key.

export interface RequestLog {
  status?: number;
  code?: string;
  error?: string;
  model?: string;
  provider?: string;
  prompt_tokens?: number;
  completion_tokens?: number;
  stream?: boolean;
  /** Milliseconds from arrival to the first content delta. */
  ttft_ms?: number;
}
