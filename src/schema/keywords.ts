// What each JSON Schema keyword means to node-llama-cpp's grammar generator, and merging schemas that apply side by
// side (allOf branches, keywords beside oneOf/anyOf) when their keywords do not overlap.
import { pointer } from "./json-pointer.ts";
import { deepEqual } from "./validate.ts";

export type Obj = Record<string, unknown>;
/** What the grammar does with one keyword (src/schema/prepare.ts lists each use). */
export type KeywordKind = "enforced" | "annotation" | "rewritten" | "unsupported";
/** Where a keyword of the schema being walked sits, as a JSON pointer. */
export type At = (key: string) => string;

/** No effect on which values are valid. OpenAPI's `nullable` is not JSON Schema: ignored, so null is never generated. */
export const ANNOTATIONS = new Set(["$schema", "$id", "$comment", "$vocabulary", "$anchor", "title", "description", "default",
  "examples", "deprecated", "readOnly", "writeOnly", "contentMediaType", "contentEncoding", "contentSchema", "nullable", "strict"]);
/** Validation keywords the grammar cannot express: dropped from the grammar and never checked after it (refused under strict). */
export const UNSUPPORTED = new Set(["multipleOf", "not",
  "if", "then", "else", "dependentSchemas", "dependentRequired", "patternProperties", "propertyNames", "contains",
  "minContains", "maxContains", "uniqueItems", "unevaluatedItems", "unevaluatedProperties", "$dynamicRef", "$dynamicAnchor",
  "$recursiveRef", "$recursiveAnchor"]);
/** Keywords that only constrain one kind of value: they let a schema without `type` say which it means. */
export const FAMILY: Record<string, string> = {
  properties: "object", additionalProperties: "object", required: "object", minProperties: "object", maxProperties: "object",
  patternProperties: "object", propertyNames: "object", dependentRequired: "object", dependentSchemas: "object",
  items: "array", prefixItems: "array", additionalItems: "array", minItems: "array", maxItems: "array", contains: "array",
  uniqueItems: "array", minLength: "string", maxLength: "string", pattern: "string", format: "string",
  minimum: "number", maximum: "number", exclusiveMinimum: "number", exclusiveMaximum: "number", multipleOf: "number",
};
export const TYPES = ["string", "number", "integer", "boolean", "null", "object", "array"];
export const COMBINATORS = new Set(["oneOf", "anyOf", "allOf"]);

/** Any JSON value: the generator has no "any" schema of its own (a missing type forces `null`). */
export const anyJson = (): Obj => ({
  oneOf: [{ type: ["string", "number", "boolean", "null"] }, { type: "object", additionalProperties: true }, { type: "array" }],
});

export const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
/** The keywords that constrain values: not annotations, not definitions. */
export const constraining = (s: Obj) => Object.keys(s).filter((k) => !ANNOTATIONS.has(k) && k !== "$defs" && k !== "definitions");

/**
 * Merges schemas whose constraining keywords do not overlap (an identical value or intersecting `type`s may
 * repeat); each keyword keeps its own path. Undefined when they overlap; null when their types cannot meet.
 * `tick` is called per keyword and per value compared (to charge a SchemaBudget).
 */
export function mergeAll(parts: { schema: unknown; path: string }[], at: At, tick?: () => void): { schema: Obj; at: At } | null | undefined {
  const schema: Obj = {};
  const origin = new Map<string, string>();
  for (const part of parts) {
    if (part.schema === true) continue;
    if (!isObj(part.schema)) return undefined;
    for (const [k, v] of Object.entries(part.schema)) {
      tick?.();
      const mine = part.path === "" ? at(k) : pointer(part.path, k);
      if (!(k in schema) || ANNOTATIONS.has(k)) {
        if (!(k in schema)) (schema[k] = v), origin.set(k, mine);
      } else if (k === "type") {
        const a = ([] as unknown[]).concat(schema.type), b = ([] as unknown[]).concat(v);
        const both = [...a.filter((t) => b.includes(t) || (t === "integer" && b.includes("number"))), ...b.filter((t) => t === "integer" && a.includes("number"))];
        if (both.length === 0) return null;
        schema.type = [...new Set(both)];
      } else if (!deepEqual(schema[k], v, tick)) return undefined;
    }
  }
  return { schema, at: (k) => origin.get(k) ?? at(k) };
}
