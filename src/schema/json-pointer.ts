// JSON Pointer (RFC 6901), the one spelling of it: a pointer built a key at a time, and a pointer read back into its
// keys. Schema walks, value checks and error params all name places this way.

/** `base` extended by one key, `~` and `/` escaped as `~0` and `~1`. */
export const pointer = (base: string, key: string | number): string => `${base}/${String(key).replace(/~/g, "~0").replace(/\//g, "~1")}`;

/** The keys a pointer names, unescaped ("" names the whole document: no keys). */
export const pointerKeys = (path: string): string[] => (path === "" ? [] : path.slice(1).split("/").map((raw) => raw.replace(/~1/g, "/").replace(/~0/g, "~")));
