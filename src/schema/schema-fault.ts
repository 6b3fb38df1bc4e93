// A SchemaError as the caller sees it, the same from the gateway and from an agent: a 400 whose param is the request
// field under which the schema sits, extended by the JSON pointer of the keyword at fault.
import { ApiError } from "../errors.ts";
import type { SchemaError } from "./bounds.ts";
import { pointerKeys } from "./json-pointer.ts";

/** Where a response_format's schema sits in the request. */
export const SCHEMA_PARAM = "response_format.json_schema.schema";

/** A JSON pointer into the schema as a request field path: "/properties/a/format" → "<base>.properties.a.format". */
export function schemaParam(pointer: string, base: string): string {
  return pointerKeys(pointer).reduce((out, key) => out + (/^(?:0|[1-9][0-9]*)$/.test(key) ? `[${key}]` : `.${key}`), base);
}

/** The 400 for a schema under `base` (`response_format.json_schema.schema`, `tools[0].function.parameters`). */
export function schemaFault(err: SchemaError, base: string): ApiError {
  const param = schemaParam(err.path, base);
  const why = err.code === "schema_too_complex" ? err.detail : `this schema cannot be compiled into a grammar: ${err.message}`;
  return new ApiError(err.code, `${param}: ${why}`, { param });
}
