// Each token's bytes, read once per model from the GGUF vocabulary: as llama.cpp's grammar sees them (the UTF-8
// guard) and, where it provably is one, as the answer's text (TokenText's decoder), which then needs no native call.
import { LlamaVocabularyType, type LlamaModel, type Token } from "node-llama-cpp";

/** A vocabulary as the GGUF stores it (`tokenizer.ggml.*`). */
export interface Vocabulary {
  /** `tokenizer.ggml.model`: "gpt2" (byte-level BPE) or "llama" (SentencePiece with byte tokens). */
  model: string;
  tokens: readonly string[];
  token_type?: readonly number[];
}

/** A token's attributes once llama.cpp has loaded the model (it retypes some tokens by their text). */
export interface Attributes {
  unknown: boolean;
  control: boolean;
  userDefined: boolean;
  normal: boolean;
  byte: boolean;
}

const NORMAL = 1;
const BYTE = 6;
const utf8 = new TextEncoder();
const NONE = new Uint8Array(0);

/** GPT-2's byte-level BPE writes each byte as one printable character; this is its inverse. */
function unicodeToByte(): Map<number, number> {
  const map = new Map<number, number>();
  let shifted = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    map.set(printable ? b : 256 + shifted++, b);
  }
  return map;
}
const BYTE_OF = unicodeToByte();

/** A byte-level BPE token's bytes, or undefined when a character is not byte-mapped (llama.cpp then writes an
 * `[UNK_BYTE_…]` marker, which nothing here reproduces). */
function byteLevel(text: string): Uint8Array | undefined {
  const out: number[] = [];
  for (const char of text) {
    const byte = BYTE_OF.get(char.codePointAt(0)!);
    if (byte === undefined) return undefined;
    out.push(byte);
  }
  return Uint8Array.from(out);
}

/** A `<0xXX>` byte token's byte. */
function hexByte(text: string): Uint8Array | undefined {
  const hex = /^<0x([0-9A-Fa-f]{2})>$/.exec(text);
  return hex ? Uint8Array.of(parseInt(hex[1]!, 16)) : undefined;
}

/**
 * Each token's bytes as llama.cpp writes them out (its token_to_piece), or undefined for a vocabulary of another
 * kind, whose tokens are whole characters. Tokens that are not normal text (control, user-defined) are their text.
 */
export function tokenBytes(vocabulary: Vocabulary): Uint8Array[] | undefined {
  const { model, tokens, token_type: types } = vocabulary;
  if (model === "gpt2") {
    return tokens.map((text, i) => ((types === undefined || types[i] === NORMAL) && byteLevel(text)) || utf8.encode(text));
  }
  if (model === "llama") {
    return tokens.map((text, i) => (types?.[i] === BYTE && hexByte(text)) || utf8.encode(text.replaceAll("\u2581", " ")));
  }
  return undefined;
}

/** Each token's bytes end to end in one buffer (a vocabulary's worth of small arrays would take about 200 bytes a token). */
export class ByteTable {
  private constructor(
    private readonly bytes: Uint8Array,
    /** Token t's bytes run from start[t] to start[t + 1]. */
    private readonly start: Uint32Array,
  ) {}

  static of(pieces: readonly Uint8Array[]): ByteTable {
    const start = new Uint32Array(pieces.length + 1);
    pieces.forEach((piece, t) => (start[t + 1] = start[t]! + piece.length));
    const bytes = new Uint8Array(start[pieces.length]!);
    pieces.forEach((piece, t) => bytes.set(piece, start[t]));
    return new ByteTable(bytes, start);
  }

  get size(): number {
    return this.start.length - 1;
  }

  /** Token t's bytes (a view into the table), or undefined outside the vocabulary. */
  get(token: number): Uint8Array | undefined {
    const end = this.start[token + 1];
    return end === undefined || token < 0 ? undefined : this.bytes.subarray(this.start[token]!, end);
  }
}

/**
 * Each token's bytes in an answer's text (llama.cpp's token_to_piece for byte-level BPE, special tokens not
 * rendered: control and unknown tokens write nothing, user-defined ones their text, normal ones their mapped bytes,
 * byte tokens their <0xXX>, any other none), or undefined when a token's bytes are not certain. These are the text
 * only if the detokenizer adds nothing across tokens, which `textBytes` checks on the model.
 */
export function answerBytes(vocabulary: Vocabulary, attributes: (token: Token) => Attributes): ByteTable | undefined {
  if (vocabulary.model !== "gpt2") return undefined;
  const pieces: Uint8Array[] = new Array(vocabulary.tokens.length);
  for (let token = 0; token < vocabulary.tokens.length; token++) {
    const text = vocabulary.tokens[token]!;
    const a = attributes(token as Token);
    // llama.cpp renames an empty token `[EMPTY_n]`, and a string the GGUF reader could not decode is not its bytes
    const known = text !== "" && !text.includes("\uFFFD");
    let bytes: Uint8Array | undefined = NONE;
    if (a.control || a.unknown) bytes = NONE;
    else if (a.userDefined) bytes = known ? utf8.encode(text) : undefined;
    else if (a.normal) bytes = known ? byteLevel(text) : undefined;
    else if (a.byte) bytes = hexByte(text);
    if (bytes === undefined) return undefined;
    pieces[token] = bytes;
  }
  return ByteTable.of(pieces);
}

/**
 * Whether llama.cpp's detokenize of this model is its tokens' bytes one after another. For byte-level BPE it
 * changes them only by three vocabulary-wide flags (llama-vocab.cpp): add_space_prefix drops the first token's
 * leading space, clean_spaces drops spaces before punctuation (on for most pre-tokenizers, off for Qwen's), and
 * escape_whitespaces reads ▁ instead of the byte map. One call over " a ," shows each of them if set.
 */
function concatenates(model: LlamaModel, table: ByteTable): boolean {
  const find = (char: string) => {
    for (let t = 0; t < table.size; t++) {
      const bytes = table.get(t)!;
      if (bytes.length === 1 && bytes[0] === char.charCodeAt(0)) return t as Token;
    }
    return undefined;
  };
  const probe = [" ", "a", " ", ","].map(find);
  return !probe.includes(undefined) && model.detokenize(probe as Token[]) === " a ,";
}

/** Per model, its vocabulary and each table once it is asked for (null: none for this vocabulary). */
interface ModelBytes {
  vocabulary: Vocabulary | undefined;
  grammar?: Uint8Array[] | null;
  text?: ByteTable | null;
}
const models = new WeakMap<LlamaModel, ModelBytes>();

function modelBytes(model: LlamaModel): ModelBytes {
  let entry = models.get(model);
  if (entry === undefined) {
    const ggml = model.fileInfo.metadata.tokenizer?.ggml as Partial<Vocabulary> | undefined;
    entry = { vocabulary: ggml?.model !== undefined && ggml.tokens !== undefined ? (ggml as Vocabulary) : undefined };
    models.set(model, entry);
  }
  return entry;
}

/** Each token's bytes as llama.cpp's grammar reads them, or undefined for a vocabulary of another kind. */
export function grammarBytes(model: LlamaModel): readonly Uint8Array[] | undefined {
  const entry = modelBytes(model);
  if (entry.grammar === undefined) entry.grammar = (entry.vocabulary && tokenBytes(entry.vocabulary)) ?? null;
  return entry.grammar ?? undefined;
}

/** Each token's bytes in the answer's text, when the model's detokenize is provably their concatenation. */
export function textBytes(model: LlamaModel): ByteTable | undefined {
  const entry = modelBytes(model);
  if (entry.text === undefined) {
    const { vocabulary } = entry;
    const bpe = vocabulary !== undefined && model.vocabularyType === LlamaVocabularyType.bpe;
    const table = bpe ? answerBytes(vocabulary, (token) => model.getTokenAttributes(token)) : undefined;
    entry.text = table !== undefined && concatenates(model, table) ? table : null;
  }
  return entry.text ?? undefined;
}
