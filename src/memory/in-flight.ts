/**
 * The memory budget of messages in flight: bytes of SMTP data and HTTP bodies that are being
 * received, analysed and stored at once. Each holder reserves its bytes as they arrive; a holder
 * that does not fit is told to try later (SMTP 452, HTTP 503) instead of pushing a small VPS into
 * swap or the OOM killer. The process holds a few times these bytes at its peak (the raw message,
 * its decoded parts and the stored copy), which is what the default leaves room for.
 */
export interface Reservation {
  /** Adds `bytes` to this holder's share; false, and nothing added, when the budget is spent. */
  grow(bytes: number): boolean;
  /** Returns the whole share; later calls do nothing. */
  release(): void;
}

export interface InFlightBudget {
  open(): Reservation;
  /** Bytes reserved now, for the metrics. */
  inUse(): number;
  /** Whether `bytes` more would fit now (an early, advisory answer: SMTP's SIZE at MAIL FROM). */
  fits(bytes: number): boolean;
}

export function inFlightBudget(limitBytes: number): InFlightBudget {
  let used = 0;
  // A message up to the size limits must always get through an otherwise idle server, whatever the budget.
  const fits = (bytes: number, held: number) => used + bytes <= limitBytes || used === held;
  return {
    open() {
      let held = 0;
      let released = false;
      return {
        grow(bytes) {
          if (released || !fits(bytes, held)) return false;
          held += bytes;
          used += bytes;
          return true;
        },
        release() {
          if (released) return;
          released = true;
          used -= held;
          held = 0;
        },
      };
    },
    inUse: () => used,
    fits: (bytes) => fits(bytes, 0),
  };
}
