// GGML's Q4_0 quantisation, there and back (ggml-quants.c quantize_row_q4_0_ref, dequantize_row_q4_0): a tiny
// model's weights at exactly the error a Q4_0 file of them carries, kept in F32 so that only the weights differ.
export const Q4_0_BLOCK = 32;

/** A float32 rounded to IEEE half precision (the block scale's storage), round half away from zero. */
export function toHalf(x: number): number {
  if (x === 0 || !Number.isFinite(x)) return x;
  // 10 mantissa bits; below 2^-14 half precision is subnormal, with a fixed step of 2^-24
  const exponent = Math.max(-14, Math.floor(Math.log2(Math.abs(x))));
  const step = 2 ** (exponent - 10);
  return Math.round(x / step) * step;
}

/** Each block of 32 values: d = (the value of largest magnitude)/−8, q = min(15, ⌊x/d + 8.5⌋), x' = (q − 8)·d(f16). */
export function q4_0RoundTrip(values: Float32Array): Float32Array {
  if (values.length % Q4_0_BLOCK !== 0) throw new Error(`Q4_0 needs rows in blocks of ${Q4_0_BLOCK}, not ${values.length} values`);
  const out = new Float32Array(values.length);
  for (let start = 0; start < values.length; start += Q4_0_BLOCK) {
    let amax = 0;
    let max = 0;
    for (let j = start; j < start + Q4_0_BLOCK; j++) {
      if (Math.abs(values[j]!) > amax) {
        amax = Math.abs(values[j]!);
        max = values[j]!;
      }
    }
    const d = Math.fround(max / -8);
    const inverse = d === 0 ? 0 : Math.fround(1 / d);
    const stored = toHalf(d);
    for (let j = start; j < start + Q4_0_BLOCK; j++) {
      const q = Math.min(15, Math.trunc(Math.fround(values[j]! * inverse) + 8.5));
      out[j] = (q - 8) * stored;
    }
  }
  return out;
}
