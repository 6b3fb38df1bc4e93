// `response_format` (OpenAI structured output), checked at the gateway before any provider is used: the shape,
// a schema svc can compile into a grammar, and, under `strict: true`, no keyword the grammar cannot enforce.
// What comes out is sealed as it is (src/session/sampling.ts); the agent compiles the grammar (agent/engine/grammar/json-grammar.ts).
import * as z from "zod";
import { canonicalJson } from "../receipt/canonical-json.ts";
import { ApiError } from "../errors.ts";
import { SchemaBudget } from "../schema/bounds.ts";
import { prepareSchema, SchemaError, type KeywordUse } from "../schema/prepare.ts";
import { SCHEMA_PARAM, schemaFault, schemaParam } from "../schema/schema-fault.ts";
import { SCHEMA_NAME, type ResponseFormat } from "../session/sampling.ts";

/** What callers send: OpenAI's three types; null means "not set" as elsewhere, extra keys are ignored. */
export const ResponseFormatBody = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text") }),
  z.object({ type: z.literal("json_object") }),
  z.object({
    type: z.literal("json_schema"),
    json_schema: z.object({
      name: z.string().regex(SCHEMA_NAME, { message: "must be 1 to 64 characters a-z, A-Z, 0-9, _ or -" }),
      description: z.string().nullish(),
      schema: z.record(z.string(), z.unknown()).nullish(),
      strict: z.boolean().nullish(),
    }),
  }),
]);
export type ResponseFormatBody = z.infer<typeof ResponseFormatBody>;

/** The sealed form (undefined for text), or the 400 for a schema svc cannot serve as asked (its work drawn from `budget`). */
export function responseFormatOf(body: ResponseFormatBody | null | undefined, budget = new SchemaBudget()): ResponseFormat | undefined {
  if (body == null || body.type === "text") return undefined;
  if (body.type === "json_object") return { type: "json_object" };
  const { name, schema, strict } = body.json_schema;
  const sealed: ResponseFormat = { type: "json_schema", json_schema: { name } };
  if (schema != null) {
    checkSchema(schema, strict === true, SCHEMA_PARAM, budget);
    sealed.json_schema.schema = schema;
  }
  if (strict != null) sealed.json_schema.strict = strict;
  return sealed;
}

/**
 * A schema svc can compile into a grammar within the bounds of src/schema/bounds.ts (its work drawn from the
 * request's `budget`), or the 400 naming the field under `base` (the response_format schema, or a tool's
 * parameters); under `strict`, also no keyword the grammar cannot enforce.
 */
export function checkSchema(schema: Record<string, unknown>, strict: boolean, base: string, budget: SchemaBudget): void {
  let uses: KeywordUse[];
  try {
    uses = prepareSchema(schema, budget).uses;
  } catch (err) {
    if (!(err instanceof SchemaError)) throw err;
    throw schemaFault(err, base);
  }
  // a "\ud800" escape is no Unicode text, so the sealed request's canonical JSON could not hold it
  if (!sealable(schema)) {
    throw new ApiError("invalid_value", `${base}: contains a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape), which is not text; send well-formed Unicode.`, {
      param: base,
    });
  }
  if (!strict) return;
  const refused = uses.find((u) => u.kind === "unsupported");
  if (refused === undefined) return;
  const param = schemaParam(refused.path, base);
  const why = refused.note === undefined ? "" : ` (${refused.note})`;
  throw new ApiError(
    "invalid_value",
    `${param}: strict mode needs every keyword enforced while generating, and svc's grammar cannot enforce "${refused.keyword}"${why}; remove it, or send strict: false to have it listed as not enforced.`,
    { param },
  );
}

function sealable(schema: unknown): boolean {
  try {
    canonicalJson(schema);
    return true;
  } catch {
    return false;
  }
}
