// Whether a request is Unicode text throughout (issue 41 item 8): a JSON escape such as "\ud800" can put half a
// surrogate pair in any string, which no UTF-8 encodes, so the sealed request's canonical JSON cannot hold it. One
// walk over what is sealed finds it wherever it is (a tool's description, a call's id or arguments, a schema).

const LONE_SURROGATE = /\p{Surrogate}/u;

/** The path to the first string (or object key) in `value` that holds a lone UTF-16 surrogate, if any. */
export function loneSurrogateAt(value: unknown, path: (string | number)[] = []): (string | number)[] | undefined {
  if (typeof value === "string") return LONE_SURROGATE.test(value) ? path : undefined;
  if (typeof value !== "object" || value === null) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = loneSurrogateAt(value[i], [...path, i]);
      if (found) return found;
    }
    return undefined;
  }
  for (const [key, inner] of Object.entries(value)) {
    if (LONE_SURROGATE.test(key)) return [...path, key];
    const found = loneSurrogateAt(inner, [...path, key]);
    if (found) return found;
  }
  return undefined;
}
