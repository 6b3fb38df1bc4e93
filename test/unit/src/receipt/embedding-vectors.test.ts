// RECEIPTS.md "Embeddings": the canonical form an embeddings receipt's response_sha256 covers.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { embeddingsContent, embeddingsContentLength, embeddingsPieces, readEmbeddingsContent, vectorBase64, vectorFromBase64 } from "../../../../src/receipt/embedding-vectors.ts";
import { sha256Hex } from "../../../../src/receipt/sha256.ts";

describe("RECEIPTS.md embeddings: the canonical form", () => {
  it("is the RFC 8785 array of each vector's float32 little-endian base64 (the test vector in RECEIPTS.md)", () => {
    const vectors = [vectorBase64([0.5, -0.25, 1]), vectorBase64([0, 1, -1])];
    expect(vectors).toEqual(["AAAAPwAAgL4AAIA/", "AAAAAAAAgD8AAIC/"]);
    const content = embeddingsContent(vectors);
    expect(content).toBe('["AAAAPwAAgL4AAIA/","AAAAAAAAgD8AAIC/"]');
    expect(sha256Hex(content)).toBe("4c43797eb212d1dac3cdb66e597857e0260f0b21c6de7ce77b088a5b2ef38056");
    expect(readFileSync(new URL("../../../../RECEIPTS.md", import.meta.url), "utf8")).toContain("`4c43797eb212d1dac3cdb66e597857e0260f0b21c6de7ce77b088a5b2ef38056`");
    expect(embeddingsPieces(vectors).join("")).toBe(content);
    expect(content.length).toBe(embeddingsContentLength(2, 3));
    expect(readEmbeddingsContent(content, 2, 3)).toEqual([[0.5, -0.25, 1], [0, 1, -1]]);
  });

  it("float answers carry the float32 values, which map back to the same bytes", () => {
    const b64 = vectorBase64([0.1, Math.PI]);
    const floats = vectorFromBase64(b64, 2)!;
    expect(floats).toEqual([Math.fround(0.1), Math.fround(Math.PI)]);
    expect(vectorBase64(JSON.parse(JSON.stringify(floats)) as number[])).toBe(b64);
  });

  it("refuses anything but the canonical form of the count and length expected", () => {
    const content = embeddingsContent([vectorBase64([1, 2])]);
    expect(readEmbeddingsContent(content, 2, 2)).toBeUndefined();
    expect(readEmbeddingsContent(content, 1, 3)).toBeUndefined();
    expect(readEmbeddingsContent(content.replace("[", "[ "), 1, 2)).toBeUndefined();
    expect(readEmbeddingsContent('["AAAAAAAA"]', 1, 2)).toBeUndefined(); // 6 bytes: not two float32 values
    expect(vectorFromBase64("AAAAAAAAAAB=", 2)).toBeUndefined(); // stray padding bits: not the one byte form
    expect(vectorFromBase64("AAAA*AAAAAA=", 2)).toBeUndefined();
  });
});
