// Inputs cut into chunks anywhere, for the fuzz targets of parsers that read a stream: each must
// read the same bytes the same way however they arrive.
import fc from "fast-check";

/** Bytes from `input`, with up to 12 places to cut them. */
export function cutAnywhere(input: fc.Arbitrary<Buffer>): fc.Arbitrary<[Buffer, number[]]> {
  return input.chain((bytes) => fc.tuple(fc.constant(bytes), fc.uniqueArray(fc.integer({ min: 1, max: Math.max(1, bytes.length - 1) }), { maxLength: 12 })));
}

/** The bytes as the chunks the cuts make, none empty. */
export function chunksOf(bytes: Buffer, cuts: number[]): Buffer[] {
  const at = [0, ...cuts.filter((cut) => cut < bytes.length).sort((a, b) => a - b), bytes.length];
  return at.slice(1).map((end, i) => bytes.subarray(at[i], end)).filter((chunk) => chunk.length > 0);
}
