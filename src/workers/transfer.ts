// Bytes between threads: moved rather than copied where they can be, and Buffers again on arrival.

/**
 * The ArrayBuffers of `views` that may move to another thread instead of being copied: those a
 * view covers whole. A small Buffer shares Node's allocation pool with others, which must stay.
 */
export function transferable(views: Uint8Array[]): ArrayBuffer[] {
  const whole = views.filter((view) => view.byteOffset === 0 && view.byteLength === view.buffer.byteLength).map((view) => view.buffer as ArrayBuffer);
  return [...new Set(whole)];
}

/** A Buffer over the same bytes: structured cloning turns Buffers into plain Uint8Arrays. */
export const asBuffer = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
