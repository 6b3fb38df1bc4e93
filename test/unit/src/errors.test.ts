// The one error type (SPEC §2.7, §7): the code table decides status, type, svc_action and the Retry-After wait.
import { describe, expect, it } from "vitest";
import { ApiError, ERROR_CODES, type ErrorCode } from "../../../src/errors.ts";

describe("§7 Errors: Retry-After", () => {
  const codes = Object.keys(ERROR_CODES) as ErrorCode[];

  it("every 503, and 502 directory_unavailable, names a wait of at least 1 s with no caller help", () => {
    const waiting = codes.filter((code) => ERROR_CODES[code].status === 503 || code === "directory_unavailable");
    expect(waiting).toEqual(expect.arrayContaining(["provider_unavailable", "overloaded", "directory_unavailable", "shutting_down"]));
    for (const code of waiting) expect([code, new ApiError(code, "x").retryAfterS]).toEqual([code, expect.any(Number)]);
    expect(new ApiError("provider_unavailable", "x").retryAfterS).toBe(5);
    expect(new ApiError("directory_unavailable", "x").retryAfterS).toBe(2);
  });

  it("a wait the thrower knows wins over the table's, rounded up to whole seconds", () => {
    expect(new ApiError("overloaded", "x", { retryAfterS: 2.1 }).retryAfterS).toBe(3);
    expect(new ApiError("provider_unavailable", "x", { retryAfterS: 0.2 }).retryAfterS).toBe(1);
  });

  it("a request fault names no wait", () => {
    for (const code of codes.filter((c) => ERROR_CODES[c].status < 429)) expect(new ApiError(code, "x").retryAfterS).toBeUndefined();
  });
});
