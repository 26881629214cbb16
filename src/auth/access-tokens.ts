/**
 * Access tokens: user-scoped credentials for `/organizations`, from login and registration.
 * Opaque `at_` + 256 random bits; only the SHA-256 hash is stored, so a database leak yields no
 * usable token (a fast hash suffices: the token has full entropy, unlike a password).
 */
import { randomToken, sha256Hex } from "../ids";
import { unauthorized } from "../errors";
import type { Aggregates } from "../store";

export const accessTokenPrefix = "at_";
export const accessTokenLifetimeMs = 7 * 24 * 60 * 60 * 1000;

/** Stores the hash of a new token for the user and returns the token itself (shown this once). */
export async function issueAccessToken(store: Aggregates, userId: string, now: number): Promise<string> {
  const token = accessTokenPrefix + randomToken(32);
  await store.accounts.deleteExpiredAccessTokens(userId, now);
  await store.accounts.insertAccessToken({ tokenHash: sha256Hex(token), userId, expiresAt: now + accessTokenLifetimeMs, createdAt: now });
  return token;
}

/**
 * Sign-out: the token stops working at once; 401 when it was unknown (or already revoked), and
 * when it had expired, as any other use of it is (cleared all the same).
 */
export async function revokeAccessToken(store: Aggregates, token: string, now: number): Promise<void> {
  const tokenHash = sha256Hex(token);
  const row = await store.accounts.findAccessTokenByHash(tokenHash);
  if (!row || !(await store.accounts.deleteAccessToken(tokenHash))) throw unauthorized("Invalid access token");
  if (row.expiresAt <= now) throw unauthorized("Access token expired: log in again");
}

/** The user an access token belongs to; 401 when it is unknown or expired. */
export async function userOfAccessToken(store: Aggregates, token: string, now: number): Promise<string> {
  const row = await store.accounts.findAccessTokenByHash(sha256Hex(token));
  if (!row) throw unauthorized("Invalid access token");
  if (row.expiresAt <= now) throw unauthorized("Access token expired: log in again");
  return row.userId;
}
