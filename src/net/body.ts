// Bodies of responses from other parties' servers, read up to a bound: a peer must not make
// inboxd download (or, through Content-Encoding, inflate) an endless body.

export interface BoundedBody {
  /** The body's first bytes, at most the limit. */
  bytes: Buffer;
  /** The body ended within the limit. */
  complete: boolean;
  /** Why reading stopped mid-body (a deadline, a lost connection); `bytes` holds what arrived. */
  error?: unknown;
}

/** Reads at most `limit` bytes of the body (one chunk past it, to know) and cancels the rest. */
export async function readBodyUpTo(response: Response, limit: number): Promise<BoundedBody> {
  if (response.body === null) return { bytes: Buffer.alloc(0), complete: true };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let ended = false;
  let error: unknown;
  try {
    while (size <= limit) {
      const next = await reader.read();
      if (next.done) {
        ended = true;
        break;
      }
      chunks.push(next.value);
      size += next.value.length;
    }
  } catch (cause) {
    error = cause;
  } finally {
    reader.cancel().catch(() => {});
  }
  return { bytes: Buffer.concat(chunks).subarray(0, limit), complete: ended && size <= limit, error };
}
