// The catalog of model aliases (DESIGN §3): parsing `models.lock.json`, the `GET /v1/catalog` body, and
// resolution of a request's `model` value to the alias that serves it. Portable (a caller's client runs it); reading
// the file is src/catalog-file.ts's.
import * as z from "zod";
import { ApiError } from "./errors.ts";
import { hexChars } from "./receipt/hex.ts";
import { describeIssues } from "./validation.ts";

/** `model` value that always means the catalog default (SPEC §1). */
export const LOCAL_ALIAS = "svc-local";

// `svc-agent pull` builds the download URL from hub_id and file, and the local path from file, so both hold
// only what a model hub allows in a name: path segments of letters, digits, ".", "_" and "-" that start with
// a letter or digit (never "." or ".."), and no ".." anywhere, so no scheme, query, fragment, escape or climb.
const SEGMENT = "[A-Za-z0-9][A-Za-z0-9._-]*";
const HUB_ID = new RegExp(`^${SEGMENT}/${SEGMENT}$`);
const HUB_FILE = new RegExp(`^(?:${SEGMENT}/)*${SEGMENT}\\.gguf$`);
const isHubName = (pattern: RegExp, value: string) => pattern.test(value) && !value.includes("..");
const HUB_RULE = 'letters, digits, ".", "_" and "-", each segment starting with a letter or digit, and no ".."';

/** What an alias serves: chat completions (the default) or embeddings (POST /v1/embeddings). */
export const MODEL_KINDS = ["chat", "embedding"] as const;
export type ModelKind = (typeof MODEL_KINDS)[number];

/** `created` of a GET /v1/models entry whose catalog entry names no time of its own (2025-01-01T00:00:00Z). */
export const CATALOG_EPOCH = 1_735_689_600;

export const CatalogEntrySchema = z
  .strictObject({
    alias: z.string().regex(/^[a-z0-9][a-z0-9._-]*$/, "expected a lowercase alias such as qwen3-4b"),
    hub_id: z.string().max(200),
    file: z.string().max(500),
    revision: hexChars(40),
    sha256: hexChars(64),
    size_bytes: z.number().int().nonnegative(),
    min_memory_gb: z.number().positive(),
    license: z.string().min(1),
    /** Absent means "chat", so every chat entry reads as it always did. */
    kind: z.enum(MODEL_KINDS).optional(),
    /** Unix seconds: when the entry's pin was made (GET /v1/models `created`); CATALOG_EPOCH without one. */
    created: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).optional(),
    /** An embedding model's vector length. */
    embedding_dimensions: z.number().int().positive().max(65_536).optional(),
    /** The shortest vector an embedding model's Matryoshka training keeps useful: `dimensions` may truncate to it. */
    matryoshka_min: z.number().int().positive().optional(),
  })
  // here rather than on the fields, so that the message can name the entry's alias
  .superRefine((entry, ctx) => {
    if (!isHubName(HUB_ID, entry.hub_id)) {
      ctx.addIssue({ code: "custom", path: ["hub_id"], message: `alias ${entry.alias}: ${JSON.stringify(entry.hub_id)} is not a model-hub id: expected owner/name such as Qwen/Qwen3-4B-GGUF, of ${HUB_RULE}` });
    }
    if (!isHubName(HUB_FILE, entry.file)) {
      ctx.addIssue({ code: "custom", path: ["file"], message: `alias ${entry.alias}: ${JSON.stringify(entry.file)} is not a hub file: expected a relative path ending in .gguf such as Qwen3-4B-Q4_K_M.gguf, of ${HUB_RULE}` });
    }
    const embedding = entry.kind === "embedding";
    if (embedding !== (entry.embedding_dimensions !== undefined)) {
      ctx.addIssue({ code: "custom", path: ["embedding_dimensions"], message: `alias ${entry.alias}: embedding_dimensions is for, and required of, an entry of kind "embedding"` });
    }
    if (entry.matryoshka_min !== undefined && !(embedding && entry.matryoshka_min <= (entry.embedding_dimensions ?? 0))) {
      ctx.addIssue({ code: "custom", path: ["matryoshka_min"], message: `alias ${entry.alias}: matryoshka_min needs kind "embedding" and at most embedding_dimensions` });
    }
  });

export const CatalogSchema = z
  .strictObject({
    version: z.literal(1),
    default: z.string().min(1),
    models: z.array(CatalogEntrySchema).min(1),
  })
  .superRefine((catalog, ctx) => {
    const seen = new Set<string>();
    catalog.models.forEach((entry, i) => {
      for (const [field, value] of [["alias", entry.alias], ["hub_id", entry.hub_id]] as const) {
        if (seen.has(value)) ctx.addIssue({ code: "custom", path: ["models", i, field], message: `duplicate name ${value}` });
        seen.add(value);
      }
      if (entry.alias === LOCAL_ALIAS) {
        ctx.addIssue({ code: "custom", path: ["models", i, "alias"], message: `${LOCAL_ALIAS} is reserved` });
      }
    });
    const fallback = catalog.models.find((m) => m.alias === catalog.default);
    if (fallback === undefined) {
      ctx.addIssue({ code: "custom", path: ["default"], message: `${catalog.default} is not an alias in models` });
    } else if (kindOf(fallback) !== "chat") {
      ctx.addIssue({ code: "custom", path: ["default"], message: `${catalog.default} is an embedding model; the default must be a chat model` });
    }
  });

export type CatalogEntry = z.infer<typeof CatalogEntrySchema>;

export const kindOf = (entry: Pick<CatalogEntry, "kind">): ModelKind => entry.kind ?? "chat";
export type Catalog = z.infer<typeof CatalogSchema>;

/** Body of `GET {coordinator}/v1/catalog`. */
export interface CatalogBody {
  object: "list";
  default: string;
  data: CatalogEntry[];
}

export class CatalogError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CatalogError";
  }
}

export function parseCatalog(value: unknown, source = "catalog"): Catalog {
  const result = CatalogSchema.safeParse(value);
  if (!result.success) throw new CatalogError(`${source}: ${describeIssues(result.error)}`);
  return result.data;
}

export function catalogBody(catalog: Catalog): CatalogBody {
  return { object: "list", default: catalog.default, data: catalog.models };
}

/** Reads a `GET /v1/catalog` body back into a catalog (for `--coordinator`). */
export function catalogFromBody(value: unknown, source: string): Catalog {
  const body = z.object({ object: z.literal("list"), default: z.string(), data: z.array(z.unknown()) }).safeParse(value);
  if (!body.success) throw new CatalogError(`${source}: not a catalog body (${describeIssues(body.error)})`);
  return parseCatalog({ version: 1, default: body.data.default, models: body.data.data }, source);
}

export function findAlias(catalog: Catalog, alias: string): CatalogEntry | undefined {
  return catalog.models.find((m) => m.alias === alias);
}

const ROUTE_OF: Record<ModelKind, string> = { chat: "POST /v1/chat/completions", embedding: "POST /v1/embeddings" };

/**
 * Resolves a request's `model`: an alias, an entry's hub_id (→ its alias) or `svc-local` (→ the default).
 * Empty → 400; anything else → 404 `model_not_found`, before any provider is touched; a model of another kind
 * than the route serves → 400 `model_kind_mismatch` naming it.
 */
export function resolveModel(catalog: Catalog, requested: string, kind: ModelKind = "chat"): CatalogEntry {
  if (requested.trim() === "") throw new ApiError("invalid_value", "model must not be empty", { param: "model" });
  const name = requested === LOCAL_ALIAS ? catalog.default : requested;
  // hub ids are case-insensitive on the hub itself, so `qwen/qwen3-4b-gguf` names the same model
  const entry = catalog.models.find((m) => m.alias === name || m.hub_id.toLowerCase() === name.toLowerCase());
  if (entry === undefined) {
    const known = catalog.models.map((m) => m.alias).join(", ");
    throw new ApiError("model_not_found", `The model '${requested}' does not exist. Available aliases: ${known}.`, {
      param: "model",
    });
  }
  if (kindOf(entry) !== kind) {
    const served = catalog.models.filter((m) => kindOf(m) === kind).map((m) => m.alias).join(", ");
    throw new ApiError(
      "model_kind_mismatch",
      `The model '${requested}' is ${kindOf(entry) === "embedding" ? "an embedding" : "a chat"} model; ${ROUTE_OF[kindOf(entry)]} serves it. This route serves: ${served || "none in this catalog"}.`,
      { param: "model" },
    );
  }
  return entry;
}
