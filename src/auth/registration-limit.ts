/**
 * Registrations per client address: at most INBOXD_REGISTER_LIMIT an hour. Each one costs an
 * argon2id hash (tens of ms of CPU) and creates an organization, so an open /auth/register would
 * let one client spend the server's CPU and fill its database. Counted in fixed hourly windows,
 * in the login throttle's table under a subject of its own (`register:` and the address, an IPv6
 * address by its /64 as for logins), before the password is hashed.
 */
import type { App } from "../app";
import { ServiceError } from "../errors";
import { addressSubject } from "./login-throttle";

const windowMs = 3_600_000;

/** 429 once the address used up its registrations of the hour; otherwise counts this one. */
export async function countRegistration(app: App, clientIp: string | undefined) {
  const address = clientIp ? addressSubject(clientIp) : undefined;
  if (!address) return;
  const subject = `register:${address}`;
  await app.store.transaction(async (tx) => {
    const row = (await tx.loginThrottles.find([subject]))[0];
    const now = app.clock.now();
    const fresh = !row || now - row.windowStart >= windowMs;
    const windowStart = fresh ? now : row.windowStart;
    const attempts = fresh ? 1 : row.attempts + 1;
    if (attempts > app.config.registerLimit) {
      const seconds = Math.ceil((windowStart + windowMs - now) / 1000);
      throw new ServiceError("rate_limited", "Too many registrations from this address, please try again later.", { "Retry-After": String(seconds) });
    }
    await tx.loginThrottles.prune(now);
    await tx.loginThrottles.save({ subject, windowStart, attempts, previousAttempts: 0, lockedUntil: null, expiresAt: windowStart + windowMs });
  });
}
