/**
 * How both engines stage large values (sqlite/blobs.ts, postgres/blobs.ts): a value over
 * STAGE_THRESHOLD is written ahead of its row, CHUNK_BYTES at a time.
 */
export const STAGE_THRESHOLD = 256 * 1024;
/** One turn's write: about 4 ms at SQLite's 4 KiB pages. */
const CHUNK_BYTES = 256 * 1024;

/** A row's bytes whole: its inline `head` (a received copy's trace fields; usually empty), then its blob's. */
export const headThenBlob = (head: Uint8Array, blob: Buffer): Buffer => (head.byteLength === 0 ? blob : Buffer.concat([head, blob]));

/** CHUNK_BYTES at a time across the parts; only a chunk that spans two parts is copied. */
export function* chunkedParts(parts: Uint8Array[]): Generator<Uint8Array> {
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  for (const part of parts) {
    for (let at = 0; at < part.byteLength; ) {
      const take = Math.min(CHUNK_BYTES - pendingBytes, part.byteLength - at);
      pending.push(part.subarray(at, at + take));
      pendingBytes += take;
      at += take;
      if (pendingBytes === CHUNK_BYTES) {
        yield pending.length === 1 ? pending[0]! : Buffer.concat(pending);
        pending = [];
        pendingBytes = 0;
      }
    }
  }
  if (pendingBytes > 0) yield pending.length === 1 ? pending[0]! : Buffer.concat(pending);
}
