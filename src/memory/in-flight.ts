/**
 * The memory budget of messages in flight: bytes of SMTP data and HTTP bodies that are being
 * received, analysed and stored at once. Each holder reserves its bytes as they arrive; a holder
 * that does not fit is told to try later (SMTP 452, HTTP 503) instead of pushing a small VPS into
 * swap or the OOM killer. The process holds a few times these bytes at its peak (the raw message,
 * its decoded parts and the stored copy), which is what the default leaves room for.
 */
import { Counts } from "../counts";

export interface Reservation {
  /** Makes this holder's share at least `bytes`; false, and nothing added, when the budget is spent. */
  cover(bytes: number): boolean;
  /**
   * Returns the whole share; later calls do nothing. A large share leaves a collection behind it
   * (collectSoon), unless its holder freed what it held itself (`collect: false`, after discard).
   */
  release(options?: { collect: boolean }): void;
}

export interface InFlightBudget {
  /**
   * `client`: whose share the bytes count against (an SMTP client's address, an API caller's
   * organization id: never alike); none for the server's own work (the inbound queue's claims).
   */
  open(client?: string): Reservation;
  /** Whether `bytes` more would fit now, holding nothing. */
  fits(bytes: number, client?: string): boolean;
  /** Bytes reserved now, for the metrics. */
  inUse(): number;
}

/**
 * A holder of at least this many bytes leaves a collection behind it. The JavaScript heap frees
 * large buffers only when it next collects, which under a steady stream of big messages came late
 * enough for the process to hold three times the budget in garbage (peak RSS 815 MB against 454 MB
 * with this, for 20 MB messages one at a time). A full collection holds its thread 30-70 ms.
 */
export const COLLECT_AFTER_BYTES = 8 * 1024 * 1024;

let collectionScheduled = false;
/** One full collection in the next turn, however many large holders end in this one. */
export function collectSoon(): void {
  if (collectionScheduled) return;
  collectionScheduled = true;
  setImmediate(() => {
    collectionScheduled = false;
    Bun.gc(true);
  });
}

export function inFlightBudget(limitBytes: number): InFlightBudget {
  let used = 0;
  /**
   * One client's holders hold at most half the budget together, one of them always: a client that
   * left two DATA transfers of 16 MiB open (kept alive a byte at a time, up to the data deadline)
   * held all of it, and every other sender's mail and every large send were told to try later.
   */
  const clientShare = limitBytes / 2;
  const heldByClient = new Counts();
  // A lone holder may be as large as a message may be, the budget's and a client's share's alike:
  // a message up to the size limits must always get through an otherwise idle server, whatever the budget.
  const fits = (bytes: number, held: number, client: string | undefined) => {
    const withinBudget = used + bytes <= limitBytes || used === held;
    if (client === undefined) return withinBudget;
    const clientHeld = heldByClient.get(client);
    return withinBudget && (clientHeld + bytes <= clientShare || clientHeld === held);
  };
  const addToClient = (client: string | undefined, bytes: number) => {
    if (client !== undefined) heldByClient.add(client, bytes);
  };
  return {
    open(client) {
      let held = 0;
      let released = false;
      return {
        cover(bytes) {
          const more = bytes - held;
          if (more <= 0) return !released;
          if (released || !fits(more, held, client)) return false;
          held += more;
          used += more;
          addToClient(client, more);
          return true;
        },
        release({ collect } = { collect: true }) {
          if (released) return;
          released = true;
          if (collect && held >= COLLECT_AFTER_BYTES) collectSoon();
          used -= held;
          addToClient(client, -held);
          held = 0;
        },
      };
    },
    fits: (bytes, client) => fits(bytes, 0, client),
    inUse: () => used,
  };
}

/** Below this, a buffer is left to the collector: freeing it at once saves little. */
const DISCARD_AFTER_BYTES = 1024 * 1024;

/**
 * Frees the memory of large buffers whose holder is done with them, at once and without a
 * collection (each full collection holds the event loop 50-150 ms under a flood of large
 * messages). Only a view that covers its whole ArrayBuffer is freed: the buffer is transferred
 * to nothing (ArrayBuffer.prototype.transfer(0)), so every view of it reads as empty after.
 * Call it only where nothing else can still hold the bytes.
 */
export function discard(views: Iterable<Uint8Array>): void {
  for (const view of views) {
    if (view.byteLength >= DISCARD_AFTER_BYTES && view.byteOffset === 0 && view.byteLength === view.buffer.byteLength) (view.buffer as ArrayBuffer).transfer(0);
  }
}
