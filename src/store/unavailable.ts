/**
 * The database cannot be reached right now (a PostgreSQL server down, restarting or out of
 * connections): nothing was written, and the same call may succeed in a moment. Engines throw it
 * for connection failures so that callers answer "try again" instead of failing for good: SMTP
 * 451 4.3.0 (RFC 5321 §4.2.5: the client keeps the message and retries), the API 503 with
 * Retry-After (RFC 9110 §10.2.3).
 */
export class StoreUnavailableError extends Error {
  override name = "StoreUnavailableError";

  constructor(cause: unknown) {
    super(`the database is unreachable: ${(cause as Error)?.message ?? String(cause)}`, { cause });
  }
}

/** How long clients are told to wait before they try again while the database is unreachable. */
export const STORE_RETRY_AFTER_SECONDS = 5;

/** Whether `error`, or an error it wraps, is the database being unreachable. */
export function isStoreUnavailable(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof StoreUnavailableError) return true;
  }
  return false;
}

/**
 * Whether `error`, or an error it wraps, is the database's disk being full (SQLite's SQLITE_FULL,
 * PostgreSQL's disk_full, 53100): nothing was written, and the same write may succeed once space
 * is freed; a temporary condition, not the server's fault.
 */
export function isStoreFull(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const { code, errno } = e as { code?: unknown; errno?: unknown };
    if (code === "SQLITE_FULL" || code === "53100" || errno === "53100") return true;
  }
  return false;
}

/** How long clients are told to wait before they try again while the disk is full: someone has to free space first. */
export const STORE_FULL_RETRY_AFTER_SECONDS = 60;
