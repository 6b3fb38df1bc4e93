// SPEC §5 at the unit level: which Authorization headers carry a key, and operator keys from the environment.
import { describe, expect, it } from "vitest";
import { authenticate, bearerKey, OperatorKeys, parseOperatorKeys } from "../gateway/auth.ts";
import { ApiError } from "../src/errors.ts";

describe("§5 Authentication", () => {
  it("SVC_OPERATOR_KEYS is a comma-separated list; blanks are ignored", () => {
    expect(parseOperatorKeys(" a, b ,,c ")).toEqual(["a", "b", "c"]);
    expect(parseOperatorKeys(undefined)).toEqual([]);
  });

  it("takes the key from Authorization: Bearer <key>, scheme case-insensitive", () => {
    expect(bearerKey("Bearer sk-svc_x")).toBe("sk-svc_x");
    expect(bearerKey("bearer sk-svc_x")).toBe("sk-svc_x");
    for (const header of [undefined, "", "Bearer", "Bearer ", "Basic abc", "Bearer a b", "sk-svc_x"]) {
      expect(bearerKey(header)).toBeUndefined();
    }
  });

  it("knows exactly the operator keys", () => {
    const keys = new OperatorKeys(["sk-svc_one", "sk-svc_two"]);
    expect(keys.has("sk-svc_two")).toBe(true);
    expect(keys.has("sk-svc_tw")).toBe(false);
    expect(keys.has("sk-svc_two ")).toBe(false);
    expect(new OperatorKeys([]).has("")).toBe(false);
  });

  it("a missing or invalid key is 401 invalid_api_key, invalid_request_error, param null, fix_key", () => {
    const keys = new OperatorKeys(["sk-svc_one"]);
    for (const header of [undefined, "Basic x", "Bearer sk-svc_nope"]) {
      let error: unknown;
      try {
        authenticate(header, keys);
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(ApiError);
      expect((error as ApiError).toEnvelope()).toEqual({
        error: { message: expect.any(String), type: "invalid_request_error", code: "invalid_api_key", param: null, svc_action: "fix_key" },
      });
      expect((error as ApiError).status).toBe(401);
      expect((error as ApiError).message).not.toContain("sk-svc_nope");
    }
    expect(() => authenticate("Bearer sk-svc_one", keys)).not.toThrow();
  });
});
