/**
 * Login brute-force throttle. Each login attempt counts against its email and its client address
 * BEFORE the password is checked, so a burst of concurrent guesses cannot slip past the limit.
 * When either subject reaches INBOXD_LOGIN_MAX_FAILURES attempts within the last minute (counted), further
 * attempts for it get 429 for INBOXD_LOGIN_LOCKOUT_SECONDS. A successful login clears its email's
 * count and gives its address back the one attempt it used; so only failures add up, and one
 * user's failures never lock out another user on another address.
 */
import ipaddr from "ipaddr.js";
import type { App } from "../app";
import { ServiceError } from "../errors";
import { peerGroup } from "../net/peer-group";
import type { LoginThrottleRecord, Transaction } from "../store";

const windowMs = 60_000;

/** One login attempt: the (normalized) email it names and, when known, the client's address. */
export interface LoginAttempt {
  email: string;
  clientIp?: string;
}

/** A client counts by its peer group (../net/peer-group.ts: an IPv6 address by its /64), so rotating through it gains nothing. */
export function addressSubject(clientIp: string): string | undefined {
  return ipaddr.isValid(clientIp) ? `ip:${peerGroup(clientIp)}` : undefined;
}

/** The subjects an attempt counts against: its email and, when known, its client address. */
function subjectsOf(attempt: LoginAttempt): { email: string; address?: string } {
  return { email: `email:${attempt.email}`, address: attempt.clientIp ? addressSubject(attempt.clientIp) : undefined };
}

/** A subject's windows of a minute: where the current one started, its attempts, and those of the one before. */
type Windows = Pick<LoginThrottleRecord, "windowStart" | "attempts" | "previousAttempts">;

function withAttempts(subject: string, windows: Windows, lockedUntil: number | null): LoginThrottleRecord {
  // Kept for two windows: the next one counts this one's attempts.
  return { subject, ...windows, lockedUntil, expiresAt: Math.max(windows.windowStart + 2 * windowMs, lockedUntil ?? 0) };
}

/**
 * The windows as of `now`. They follow one another from a subject's first attempt; one with no
 * attempt for a whole window after it, or a lock that ended, starts a new count. A `now` before
 * the window's start (another node's clock a little behind) is in that window: it starting a new
 * count let attempts slip past the limit.
 */
function windowsAt(row: LoginThrottleRecord | undefined, now: number): Windows {
  const passed = row && (row.lockedUntil === null || row.lockedUntil > now) ? Math.max(0, Math.floor((now - row.windowStart) / windowMs)) : Infinity;
  if (passed === 0) return { windowStart: row!.windowStart, attempts: row!.attempts, previousAttempts: row!.previousAttempts };
  if (passed === 1) return { windowStart: row!.windowStart + windowMs, attempts: 0, previousAttempts: row!.attempts };
  return { windowStart: now, attempts: 0, previousAttempts: 0 };
}

/**
 * The attempts of the last minute: the window's own and those of the window before, at the share
 * of it the last minute still covers (rounded up): a sliding window, counted without each
 * attempt's time, as Cloudflare's rate limits are. Reset at each window's end, 9 guesses just
 * before it and 9 just after made 18 within two seconds.
 */
const lastMinute = ({ windowStart, attempts, previousAttempts }: Windows, now: number) =>
  attempts + Math.ceil((previousAttempts * Math.min(windowMs, Math.max(0, windowStart + windowMs - now))) / windowMs);

/** Counts one more attempt; the one that reaches the limit locks the subject. */
function counted(app: App, subject: string, row: LoginThrottleRecord | undefined, now: number): LoginThrottleRecord {
  const windows = windowsAt(row, now);
  const before = lastMinute(windows, now);
  const locks = before + 1 >= app.config.loginMaxFailures;
  if (locks && before < app.config.loginMaxFailures) app.log.warn("login lockout", { subject, seconds: app.config.loginLockoutSeconds });
  return withAttempts(subject, { ...windows, attempts: windows.attempts + 1 }, locks ? now + app.config.loginLockoutSeconds * 1000 : null);
}

/** 429 while the email or the address is locked; otherwise counts the attempt against both. */
export async function beginLoginAttempt(app: App, attempt: LoginAttempt) {
  const { email, address } = subjectsOf(attempt);
  const subjects = address ? [email, address] : [email];
  await app.store.transaction(async (tx) => {
    const rows = await tx.loginThrottles.find(subjects);
    // Read once the subjects are held: a time read before waiting for them is older than the count.
    const now = app.clock.now();
    const lockedUntil = Math.max(0, ...rows.map((r) => r.lockedUntil ?? 0));
    if (lockedUntil > now) {
      const seconds = Math.ceil((lockedUntil - now) / 1000);
      throw new ServiceError("rate_limited", "Too many failed logins, please try again later.", { "Retry-After": String(seconds) });
    }
    await tx.loginThrottles.prune(now);
    for (const subject of subjects) await tx.loginThrottles.save(counted(app, subject, rows.find((r) => r.subject === subject), now));
  });
}

/** After a correct password: the email starts afresh, and the address gets its attempt back. */
export async function loginSucceeded(app: App, tx: Transaction, attempt: LoginAttempt) {
  const { email, address } = subjectsOf(attempt);
  await tx.transaction(async (tx) => {
    await tx.loginThrottles.delete(email);
    if (!address) return;
    const row = (await tx.loginThrottles.find([address]))[0];
    if (!row) return;
    const now = app.clock.now();
    const counted = windowsAt(row, now);
    const windows = { ...counted, attempts: Math.max(0, counted.attempts - 1) };
    await tx.loginThrottles.save(withAttempts(row.subject, windows, lastMinute(windows, now) >= app.config.loginMaxFailures ? row.lockedUntil : null));
  });
}
