/**
 * The send rate limit: INBOXD_SEND_LIMIT sends and replies per organization in fixed hourly
 * windows (aligned to the hour, UTC), counted in SQLite so a restart keeps the count. Headers
 * follow draft-ietf-httpapi-ratelimit-headers-07: RateLimit-Limit, -Remaining, -Reset (seconds
 * until the window ends) and RateLimit-Policy `limit;w=3600`.
 */
import type { App } from "../app";
import type { Transaction } from "../store";
import { ServiceError } from "../errors";

const windowSeconds = 3600;
const windowMs = windowSeconds * 1000;

export interface RateLimitState {
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  reset: number;
}

export const tooManyRequests = "Too many requests, please try again later.";

export function rateLimitHeaders(state: RateLimitState): Record<string, string> {
  return {
    "RateLimit-Limit": String(state.limit),
    "RateLimit-Remaining": String(state.remaining),
    "RateLimit-Reset": String(state.reset),
    "RateLimit-Policy": `${state.limit};w=${windowSeconds}`,
  };
}

function currentWindow(now: number) {
  const start = now - (now % windowMs);
  return { start, reset: Math.max(1, Math.ceil((start + windowMs - now) / 1000)) };
}

function exhausted(limit: number, reset: number): ServiceError {
  return new ServiceError("rate_limited", tooManyRequests, { ...rateLimitHeaders({ limit, remaining: 0, reset }), "Retry-After": String(reset) });
}

/** The window as it stands, counting nothing: what a replayed send's response tells. */
export async function currentRateLimit(app: App, organizationId: string, now: number): Promise<RateLimitState> {
  const { start, reset } = currentWindow(now);
  const limit = app.config.sendLimit;
  return { limit, remaining: Math.max(0, limit - (await app.store.sendWindows.used(organizationId, start))), reset };
}

/** Refuses (429) when the window is already full, without counting: checked before the costly work. */
export async function assertSendAllowed(app: App, organizationId: string, now: number): Promise<void> {
  const { limit, remaining, reset } = await currentRateLimit(app, organizationId, now);
  if (remaining === 0) throw exhausted(limit, reset);
}

/** Counts one send, or refuses (429). Call inside the transaction that stores the send. */
export async function takeSend(app: App, tx: Transaction, organizationId: string, now: number): Promise<RateLimitState> {
  const { start, reset } = currentWindow(now);
  const limit = app.config.sendLimit;
  const count = await tx.sendWindows.take(organizationId, start, limit);
  if (count === undefined) throw exhausted(limit, reset);
  return { limit, remaining: limit - count, reset };
}
