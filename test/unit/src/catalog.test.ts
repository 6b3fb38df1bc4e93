// SPEC §1 "Catalog aliases", §2.1 `model`, §2.6 and DESIGN §3: the catalog file and model resolution.
import { describe, expect, it } from "vitest";
import { catchApiError } from "../../fixtures/api-error.ts";
import { catalogBody, catalogFromBody, CatalogError, LOCAL_ALIAS, parseCatalog, resolveModel } from "../../../src/catalog.ts";
import { loadCatalog } from "../../../src/catalog-file.ts";

const EMBEDDING_ENTRY = {
  alias: "qwen3-embedding-0.6b",
  hub_id: "Qwen/Qwen3-Embedding-0.6B-GGUF",
  file: "Qwen3-Embedding-0.6B-Q8_0.gguf",
  revision: "370f27d7550e0def9b39c1f16d3fbaa13aa67728",
  sha256: "06507c7b42688469c4e7298b0a1e16deff06caf291cf0a5b278c308249c3e439",
  size_bytes: 639150592,
  min_memory_gb: 2,
  license: "Apache-2.0",
  kind: "embedding",
  embedding_dimensions: 1024,
  matryoshka_min: 32,
};
/** The larger embedding models: the same pins, from the hub's Qwen GGUF repositories. */
const EMBEDDING_4B = {
  ...EMBEDDING_ENTRY,
  alias: "qwen3-embedding-4b",
  hub_id: "Qwen/Qwen3-Embedding-4B-GGUF",
  file: "Qwen3-Embedding-4B-Q4_K_M.gguf",
  revision: "f4602530db1d980e16da9d7d3a70294cf5c190be",
  sha256: "2b0cf8f17b4c723c27303015383c27ec4bf2d8314bb677d05e920dd70bb0f16b",
  size_bytes: 2496703776,
  min_memory_gb: 6,
  embedding_dimensions: 2560,
};
const EMBEDDING_8B = {
  ...EMBEDDING_ENTRY,
  alias: "qwen3-embedding-8b",
  hub_id: "Qwen/Qwen3-Embedding-8B-GGUF",
  file: "Qwen3-Embedding-8B-Q4_K_M.gguf",
  revision: "69d0e58a13e463cd99a9b83e3f5fee7c10265fab",
  sha256: "3fcd3febec8b3fd64435204db75bf0dd73b91e8d0661e0331acfe7e7c3120b85",
  size_bytes: 4676804928,
  min_memory_gb: 10,
  embedding_dimensions: 4096,
};

const bundled = loadCatalog();

describe("SPEC §1 Catalog aliases: the bundled models.lock.json", () => {
  it("pins qwen3-4b (default), qwen3-8b and the embedding models qwen3-embedding-0.6b, -4b and -8b to their exact files", () => {
    expect(bundled.default).toBe("qwen3-4b");
    expect(bundled.models).toEqual([
      {
        alias: "qwen3-4b",
        hub_id: "Qwen/Qwen3-4B-GGUF",
        file: "Qwen3-4B-Q4_K_M.gguf",
        revision: "bc640142c66e1fdd12af0bd68f40445458f3869b",
        sha256: "7485fe6f11af29433bc51cab58009521f205840f5b4ae3a32fa7f92e8534fdf5",
        size_bytes: 2497280256,
        min_memory_gb: 10,
        license: "Apache-2.0",
      },
      {
        alias: "qwen3-8b",
        hub_id: "Qwen/Qwen3-8B-GGUF",
        file: "Qwen3-8B-Q4_K_M.gguf",
        revision: "7c41481f57cb95916b40956ab2f0b139b296d974",
        sha256: "d98cdcbd03e17ce47681435b5150e34c1417f50b5c0019dd560e4882c5745785",
        size_bytes: 5027783488,
        min_memory_gb: 14,
        license: "Apache-2.0",
      },
      EMBEDDING_ENTRY,
      EMBEDDING_4B,
      EMBEDDING_8B,
    ]);
  });

  it("GET /v1/catalog body is {object: list, default, data: entries}", () => {
    const body = catalogBody(bundled);
    expect(body).toEqual({ object: "list", default: "qwen3-4b", data: bundled.models });
    expect(catalogFromBody(JSON.parse(JSON.stringify(body)), "test")).toEqual(bundled);
  });
});

describe("DESIGN §3 catalog validation: a clear error naming the bad field", () => {
  const good = () => JSON.parse(JSON.stringify({ version: 1, default: bundled.default, models: bundled.models }));
  // any: each case reaches into a different corner of raw, not-yet-validated JSON
  const cases: [string, (c: any) => void, RegExp][] = [
    ["short sha256", (c) => (c.models[1].sha256 = "abc"), /models\[1\]\.sha256: expected 64 lowercase hex characters/],
    ["uppercase revision", (c) => (c.models[0].revision = c.models[0].revision.toUpperCase()), /models\[0\]\.revision/],
    ["fractional size", (c) => (c.models[0].size_bytes = 1.5), /models\[0\]\.size_bytes/],
    ["missing license", (c) => delete c.models[0].license, /models\[0\]\.license/],
    ["path in file name", (c) => (c.models[0].file = "../x.gguf"), /models\[0\]\.file/],
    ["unknown field", (c) => (c.models[0].extra = 1), /models\[0\]/],
    ["default not an alias", (c) => (c.default = "qwen9"), /default: qwen9 is not an alias/],
    ["duplicate alias", (c) => (c.models[1].alias = "qwen3-4b"), /models\[1\]\.alias: duplicate/],
    ["reserved svc-local", (c) => (c.models[1].alias = LOCAL_ALIAS), /models\[1\]\.alias: svc-local is reserved/],
    ["wrong version", (c) => (c.version = 2), /version/],
    ["no models", (c) => (c.models = []), /models/],
    ["unknown kind", (c) => (c.models[0].kind = "rerank"), /models\[0\]\.kind/],
    ["an embedding entry without its length", (c) => delete c.models[2].embedding_dimensions, /models\[2\]\.embedding_dimensions: alias qwen3-embedding-0\.6b: embedding_dimensions is for, and required of/],
    ["a chat entry with a vector length", (c) => (c.models[0].embedding_dimensions = 8), /models\[0\]\.embedding_dimensions/],
    ["matryoshka_min past the length", (c) => (c.models[2].matryoshka_min = 2048), /models\[2\]\.matryoshka_min/],
    ["an embedding model as the default", (c) => (c.default = "qwen3-embedding-0.6b"), /default: qwen3-embedding-0\.6b is an embedding model/],
  ];
  it.each(cases)("rejects %s", (_name, mutate, message) => {
    const catalog = good();
    mutate(catalog);
    expect(() => parseCatalog(catalog, "lock")).toThrow(CatalogError);
    expect(() => parseCatalog(catalog, "lock")).toThrow(message);
  });

  it("names the file when it cannot be read or is not JSON", () => {
    expect(() => loadCatalog("/nonexistent/models.lock.json")).toThrow(/\/nonexistent\/models\.lock\.json: cannot read/);
  });
});

describe("DESIGN §3 catalog validation: hub_id and file are names a model hub allows", () => {
  // pull builds {hub}/{hub_id}/resolve/{revision}/{file} and {models-dir}/{file} from these
  const withEntry = (change: Record<string, string>) => ({ version: 1, default: "qwen3-4b", models: [{ ...bundled.models[0], ...change }, ...bundled.models.slice(1)] });
  const badHubIds = ["../..", "Qwen/..", "./x", "..", "Qwen/a..b", "Qwen", "Qwen/x/y", "https://evil.example/x", "Qwen/x?y=1", "Qwen/x#frag",
    "Qwen/%2e%2e", "Qwen\\x", "Qwen/ x", "-x/y", "Qwen/.hidden", "/Qwen/x", "Qwen/x/", "Qwen/\u00e9"];
  const badFiles = ["../x.gguf", "sub/../x.gguf", "./x.gguf", "a/./x.gguf", "/abs.gguf", "x.gguf?download=1", "x.gguf#a", "%2e%2e/x.gguf",
    "sub\\x.gguf", "x.bin", ".gguf", "sub//x.gguf", "x..gguf", "C:x.gguf", "sub/x.gguf/"];

  it.each(badHubIds)("refuses hub_id %j, naming the alias and the field", (hubId) => {
    expect(() => parseCatalog(withEntry({ hub_id: hubId }), "lock")).toThrow(
      `lock: models[0].hub_id: alias qwen3-4b: ${JSON.stringify(hubId)} is not a model-hub id: expected owner/name`,
    );
  });

  it.each(badFiles)("refuses file %j, naming the alias and the field", (file) => {
    expect(() => parseCatalog(withEntry({ file }), "lock")).toThrow(`lock: models[0].file: alias qwen3-4b: ${JSON.stringify(file)} is not a hub file`);
  });

  it("accepts hub names with dots, underscores and dashes, and a file in a folder of the repo", () => {
    const changes: Record<string, string>[] = [{ hub_id: "unsloth/Qwen3-4B-GGUF" }, { hub_id: "a.b_c-d/e.f_g-h" }, { file: "Q4_K_M/Qwen3-4B-Q4_K_M-00001-of-00002.gguf" }];
    for (const change of changes) {
      expect(parseCatalog(withEntry(change), "lock").models[0]).toMatchObject(change);
    }
  });

  it("the bundled models.lock.json loads under these rules", () => {
    expect(loadCatalog().models.map((m) => [m.hub_id, m.file])).toEqual([
      ["Qwen/Qwen3-4B-GGUF", "Qwen3-4B-Q4_K_M.gguf"],
      ["Qwen/Qwen3-8B-GGUF", "Qwen3-8B-Q4_K_M.gguf"],
      ["Qwen/Qwen3-Embedding-0.6B-GGUF", "Qwen3-Embedding-0.6B-Q8_0.gguf"],
      ["Qwen/Qwen3-Embedding-4B-GGUF", "Qwen3-Embedding-4B-Q4_K_M.gguf"],
      ["Qwen/Qwen3-Embedding-8B-GGUF", "Qwen3-Embedding-8B-Q4_K_M.gguf"],
    ]);
  });
});

describe("SPEC §2.1 model: resolution", () => {
  const table: [string, string][] = [
    ["qwen3-4b", "qwen3-4b"],
    ["qwen3-8b", "qwen3-8b"],
    ["Qwen/Qwen3-4B-GGUF", "qwen3-4b"],
    ["Qwen/Qwen3-8B-GGUF", "qwen3-8b"],
    ["qwen/qwen3-8b-gguf", "qwen3-8b"],
    [LOCAL_ALIAS, "qwen3-4b"],
  ];
  it.each(table)("%s resolves to %s", (requested, alias) => {
    expect(resolveModel(bundled, requested).alias).toBe(alias);
  });

  it("svc-local resolves to the catalog default, whatever it is", () => {
    const other = parseCatalog({ version: 1, default: "qwen3-8b", models: bundled.models });
    expect(resolveModel(other, LOCAL_ALIAS).alias).toBe("qwen3-8b");
  });

  it.each(["", "   "])("empty value %j is rejected with 400", (requested) => {
    const err = catchApiError(() => resolveModel(bundled, requested));
    expect(err.status).toBe(400);
    expect(err.toEnvelope().error).toMatchObject({ code: "invalid_value", param: "model", svc_action: "fix_request" });
  });

  it.each(["gpt-4o", "qwen3-4B", "Qwen/Qwen3-4B", "qwen3-4b ", "svc-local2"])(
    "unknown name %j gives 404 model_not_found with svc_action pick_model",
    (requested) => {
      const err = catchApiError(() => resolveModel(bundled, requested));
      expect(err.status).toBe(404);
      expect(err.toEnvelope()).toEqual({
        error: {
          message: `The model '${requested}' does not exist. Available aliases: qwen3-4b, qwen3-8b, qwen3-embedding-0.6b, qwen3-embedding-4b, qwen3-embedding-8b.`,
          type: "invalid_request_error",
          code: "model_not_found",
          param: "model",
          svc_action: "pick_model",
        },
      });
    },
  );
});

describe("issue 31: a route takes only models of its kind", () => {
  it("an embedding model named on a chat route is a 400 naming it, and the reverse", () => {
    const chat = catchApiError(() => resolveModel(bundled, "Qwen/Qwen3-Embedding-0.6B-GGUF"));
    expect([chat.status, chat.toEnvelope()]).toEqual([400, {
      error: {
        message: "The model 'Qwen/Qwen3-Embedding-0.6B-GGUF' is an embedding model; POST /v1/embeddings serves it. This route serves: qwen3-4b, qwen3-8b.",
        type: "invalid_request_error",
        code: "model_kind_mismatch",
        param: "model",
        svc_action: "pick_model",
      },
    }]);
    const embedding = catchApiError(() => resolveModel(bundled, LOCAL_ALIAS, "embedding"));
    expect(embedding.message).toBe("The model 'svc-local' is a chat model; POST /v1/chat/completions serves it. This route serves: qwen3-embedding-0.6b, qwen3-embedding-4b, qwen3-embedding-8b.");
    expect(resolveModel(bundled, "qwen3-embedding-0.6b", "embedding")).toEqual(EMBEDDING_ENTRY);
  });
});
