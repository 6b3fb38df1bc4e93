// The container side of the schema walk (src/schema/prepare.ts): objects (properties, required, additionalProperties,
// property counts, zod's propertyNames) and arrays (items, prefixItems, item counts), rewritten into what
// node-llama-cpp's grammar generator handles correctly.
import { anyJson, constraining, isObj, type At, type Obj } from "./keywords.ts";
import { pointer } from "./json-pointer.ts";
import { SchemaError } from "./bounds.ts";
import type { ScalarWalk } from "./prepare-scalars.ts";

/** What the container walks need of the Preparer: the scalar walk's, and the walk of a subschema. */
export interface ContainerWalk extends ScalarWalk {
  node(raw: unknown, path: string): Obj;
}

export function object(walk: ContainerWalk, raw: Obj, at: At, handled: Set<string>): Obj {
  for (const k of ["properties", "required", "additionalProperties", "minProperties", "maxProperties"]) handled.add(k);
  const props = raw.properties ?? {};
  const required = raw.required ?? [];
  if (!isObj(props)) throw new SchemaError(at("properties"), "properties must be an object");
  if (!Array.isArray(required) || required.some((r) => typeof r !== "string")) throw new SchemaError(at("required"), "required must be an array of names");
  const out: Obj = { type: "object" };
  const properties: Obj = {};
  if ("properties" in raw) walk.use("properties", at("properties"), "enforced", "every property is generated, optional ones too, in schema order");
  for (const [name, sub] of Object.entries(props)) {
    if (sub === false) walk.use("false", pointer(at("properties"), name), "rewritten", "a property that must be absent is never generated");
    else properties[name] = walk.node(sub, pointer(at("properties"), name));
  }
  const extra = raw.additionalProperties;
  if (extra !== undefined) {
    walk.use("additionalProperties", at("additionalProperties"), "enforced");
    out.additionalProperties = typeof extra === "boolean" ? extra : walk.node(extra, at("additionalProperties"));
  }
  if ("required" in raw) walk.use("required", at("required"), "enforced", "all properties are generated; a required name without one gets one");
  for (const name of required as string[]) {
    if (!(name in properties) && props[name] !== false) properties[name] = isObj(out.additionalProperties) ? out.additionalProperties : anyJson();
  }
  if ("propertyNames" in raw) propertyNames(walk, raw.propertyNames, at, handled, properties, out);
  if (typeof raw.minProperties === "number") (out.minProperties = raw.minProperties), walk.use("minProperties", at("minProperties"), "enforced");
  if (typeof raw.maxProperties === "number") {
    out.maxProperties = raw.maxProperties;
    // always generating optional properties must not overrun maxProperties: keep required ones first
    const names = Object.keys(properties);
    const over = names.length > raw.maxProperties;
    if (over) {
      const keep = new Set([...names.filter((n) => required.includes(n)), ...names.filter((n) => !required.includes(n))].slice(0, Math.max(0, raw.maxProperties)));
      for (const n of names) if (!keep.has(n)) delete properties[n];
    }
    walk.use("maxProperties", at("maxProperties"), over ? "rewritten" : "enforced", over ? "optional properties past the limit are never generated" : undefined);
  }
  if (Object.keys(properties).length > 0) out.properties = properties;
  return out;
}

/** zod's records: `{type: "string"}` always holds; an enum of names is generated as those properties and no other. */
function propertyNames(walk: ContainerWalk, names: unknown, at: At, handled: Set<string>, properties: Obj, out: Obj): void {
  handled.add("propertyNames");
  const keys = isObj(names) ? constraining(names) : [];
  const stringy = isObj(names) && (names.type === undefined || names.type === "string");
  if (names === true || (stringy && keys.every((k) => k === "type"))) return walk.use("propertyNames", at("propertyNames"), "enforced", "property names are always strings");
  const listed = isObj(names) && Array.isArray(names.enum) && names.enum.every((n) => typeof n === "string") ? (names.enum as string[]) : undefined;
  if (!stringy || !listed || !keys.every((k) => k === "type" || k === "enum")) return walk.use("propertyNames", at("propertyNames"), "unsupported");
  for (const name of Object.keys(properties)) if (!listed.includes(name)) delete properties[name];
  const value = out.additionalProperties;
  if (value !== false) for (const name of listed) properties[name] ??= isObj(value) ? value : anyJson();
  out.additionalProperties = false;
  walk.use("propertyNames", at("propertyNames"), "rewritten", "each listed name generated as a property, and no other");
}

export function array(walk: ContainerWalk, raw: Obj, at: At, handled: Set<string>): Obj {
  for (const k of ["items", "prefixItems", "additionalItems", "minItems", "maxItems"]) handled.add(k);
  const out: Obj = { type: "array" };
  const tuple = Array.isArray(raw.items); // draft-07: items as an array, additionalItems for the rest
  const prefixKey = tuple ? "items" : "prefixItems";
  const restKey = tuple ? "additionalItems" : "items";
  const prefix = raw[prefixKey] ?? [];
  if (!Array.isArray(prefix)) throw new SchemaError(at(prefixKey), `${prefixKey} must be an array`);
  if (prefixKey in raw) walk.use(prefixKey, at(prefixKey), tuple ? "rewritten" : "enforced", tuple ? "array form: to prefixItems" : undefined);
  if (prefix.length > 0) out.prefixItems = prefix.map((s, i) => walk.node(s, pointer(at(prefixKey), i)));
  if (!tuple && "additionalItems" in raw) walk.use("additionalItems", at("additionalItems"), "annotation", "ignored without array-form items");
  let maxItems = typeof raw.maxItems === "number" ? raw.maxItems : undefined;
  const rest = raw[restKey];
  if (rest === false) {
    walk.use(restKey, at(restKey), "rewritten", "false: maxItems set to the prefixItems length");
    maxItems = Math.min(maxItems ?? Infinity, prefix.length);
  } else if (rest !== undefined) {
    walk.use(restKey, at(restKey), tuple ? "rewritten" : "enforced", tuple ? "to items" : undefined);
    out.items = walk.node(rest, at(restKey));
  }
  if (typeof raw.minItems === "number") (out.minItems = raw.minItems), walk.use("minItems", at("minItems"), "enforced");
  if (typeof raw.maxItems === "number") walk.use("maxItems", at("maxItems"), "enforced");
  if (maxItems !== undefined) out.maxItems = maxItems;
  return out;
}
