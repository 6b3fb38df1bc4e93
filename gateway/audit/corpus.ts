// The auditor's prompts (issue 43 item 2, design §4 "Content"): `--audit-corpus FILE`, the operator's own and private
// JSONL, one item a line: `{id, kind, route, body}`, the body an OpenAI request body without `model`. Nothing in the
// repository is a production corpus: a provider that could read it would serve those prompts honestly and no other.
import { readFileSync, statSync } from "node:fs";
import * as z from "zod";

export const MAX_CORPUS_BYTES = 64 * 1024 * 1024;
export const MAX_CORPUS_ITEMS = 100_000;

export const CorpusItemSchema = z.strictObject({
  id: z.string().min(1).max(128),
  kind: z.enum(["chat", "tools", "json", "long", "conversation"]),
  route: z.enum(["chat", "responses", "completions"]),
  /** An OpenAI body for the route, without `model` (the auditor names the alias it audits) and without a pin. Its
   *  stream, max_tokens, temperature, sampling numbers, logprobs and cache_prompt give way to a shape of callers'
   *  traffic when one fits the item (traffic-shape.ts): its content, tools, stop and format are its own. */
  body: z.record(z.string(), z.unknown()).refine((b) => !("model" in b) && !("provider" in b) && !("provider_key_id" in b), "the body names no model and no provider: the auditor sets them"),
  /** User turns appended after the provider's answers (design §4); read, not yet sent. */
  then: z.array(z.string()).max(16).optional(),
});
export type CorpusItem = z.infer<typeof CorpusItemSchema>;

/** Reads the corpus, or throws an Error naming the file and the first bad line. */
export function readCorpus(path: string): CorpusItem[] {
  let size: number;
  try {
    size = statSync(path).size;
  } catch (err) {
    throw new Error(`--audit-corpus: cannot read ${path}: ${(err as Error).message}`);
  }
  if (size > MAX_CORPUS_BYTES) throw new Error(`--audit-corpus: ${path} holds ${size} bytes; at most ${MAX_CORPUS_BYTES} are read`);
  const items: CorpusItem[] = [];
  for (const [i, line] of readFileSync(path, "utf8").split("\n").entries()) {
    if (line.trim() === "") continue;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      throw new Error(`--audit-corpus: ${path} line ${i + 1} is not JSON`);
    }
    const parsed = CorpusItemSchema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new Error(`--audit-corpus: ${path} line ${i + 1}: ${issue.path.join(".") || "item"}: ${issue.message}`);
    }
    items.push(parsed.data);
    if (items.length > MAX_CORPUS_ITEMS) throw new Error(`--audit-corpus: ${path} holds more than ${MAX_CORPUS_ITEMS} items`);
  }
  if (items.length === 0) throw new Error(`--audit-corpus: ${path} holds no item`);
  return items;
}
