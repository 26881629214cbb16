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
    super(`the database is unreachable: ${driverReason(cause)}`, { cause });
  }
}

/**
 * The driver's own words for a failure: the innermost error's message and code. The errors around
 * it (drizzle's "Failed query: ... params: ...") carry the statement's values: a key's hash, an
 * address, a message's text.
 */
export function driverReason(error: unknown): string {
  let innermost = error;
  for (let depth = 0; innermost instanceof Error && innermost.cause instanceof Error && depth < 5; depth++) innermost = innermost.cause;
  if (!(innermost instanceof Error)) return String(innermost);
  const { code, errno } = innermost as { code?: unknown; errno?: unknown };
  const codes = [code, errno].filter((value) => typeof value === "string" || typeof value === "number");
  return `${innermost.message}${codes.length ? ` (${codes.join(", ")})` : ""}`;
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
  return someCause(error, (code, errno) => code === "SQLITE_FULL" || code === "53100" || errno === "53100");
}

/**
 * Whether `error` is the database's storage failing a statement: full, or an I/O error, read-only
 * or out of descriptors (SQLite's SQLITE_IOERR_*, SQLITE_READONLY_*, SQLITE_CANTOPEN; the system's
 * EIO, ENOSPC, EMFILE, ENFILE). The statement did nothing, and may succeed once the operator has
 * seen to the machine: the same answer as a full disk, not a 500.
 */
export function isStoreFailing(error: unknown): boolean {
  return isStoreFull(error) || someCause(error, (code) => typeof code === "string" && /^(SQLITE_(IOERR|READONLY|CANTOPEN)\w*|EIO|ENOSPC|EMFILE|ENFILE)$/.test(code));
}

function someCause(error: unknown, matches: (code: unknown, errno: unknown) => boolean): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const { code, errno } = e as { code?: unknown; errno?: unknown };
    if (matches(code, errno)) return true;
  }
  return false;
}

/** How long clients are told to wait before they try again while the disk is full: someone has to free space first. */
export const STORE_FULL_RETRY_AFTER_SECONDS = 60;
