/**
 * Idempotency keys (draft-ietf-httpapi-idempotency-key-header-07): a client that retries a POST
 * with the same `Idempotency-Key` gets the first request's response again instead of a second
 * message or inbox. Keys are per organization and kept 24 hours (§2.3, expiry). A retry must be
 * the same request: same method, path and body, compared by a SHA-256 fingerprint (§2.2); a
 * different one is refused (422, §2.7), and so is a retry while the first request still runs
 * (409, §2.7). Final responses are kept, 4xx included: a refusal is the answer to that request;
 * those worth trying again are not (429, 503 and 5xx), so that a retry runs it anew.
 */
import { createHash } from "node:crypto";
import type { App } from "../app";
import { conflict, invalid } from "../errors";

export const keyLifetimeMs = 24 * 60 * 60 * 1000;
export const maxKeyLength = 255;
/** The longest header that can hold a key: quoted as a Structured Fields string, each character escaped. */
export const maxKeyHeaderLength = 2 * maxKeyLength + 2;

export type Begun = { first: true } | { first: false; statusCode: number; body: Buffer };

/** SHA-256 over what makes two requests the same one. */
export const fingerprintOf = (method: string, path: string, body: unknown) =>
  createHash("sha256").update(`${method} ${path}\n${JSON.stringify(body ?? null)}`).digest("hex");

/** Records the key as running, or says what an earlier request with it answered. */
export async function beginIdempotent(app: App, organizationId: string, key: string, fingerprint: string, inboxId: string | null): Promise<Begun> {
  const now = app.clock.now();
  const held = await app.store.transaction((tx) =>
    tx.idempotencyKeys.begin({ organizationId, key, fingerprint, statusCode: null, responseBody: null, blobId: null, createdAt: now, expiresAt: now + keyLifetimeMs, inboxId }, now),
  );
  if (!held) return { first: true };
  if (held.fingerprint !== fingerprint) throw invalid("Idempotency-Key: already used in the last 24 hours for a different request (method, path or body)");
  if (held.statusCode === null) throw conflict("Idempotency-Key: a request with this key is still being processed; retry shortly");
  return { first: false, statusCode: held.statusCode, body: held.responseBody ?? Buffer.alloc(0) };
}

/** Whether a response is the final answer to its request, to be replayed, or one a retry may change. */
export const isReplayable = (statusCode: number) => statusCode < 500 && statusCode !== 429;

/**
 * The first request's response, for the retries; one that a retry may change lets the key go
 * instead. Should keeping it fail, the key goes too, rather than answer 409 for a day.
 */
export async function completeIdempotent(app: App, organizationId: string, key: string, statusCode: number, body: string): Promise<void> {
  if (!isReplayable(statusCode)) return app.store.idempotencyKeys.release(organizationId, key);
  try {
    const stored = await app.store.blobs.prepare([Buffer.from(body)], app.clock.now());
    try {
      await app.store.transaction((tx) => tx.idempotencyKeys.complete(organizationId, key, statusCode, stored));
    } finally {
      if (stored.blobId) await app.store.blobs.release([stored.blobId]);
    }
  } catch (error) {
    app.log.error("keeping the response of an idempotent request failed; its key is let go", { error });
    await app.store.idempotencyKeys.release(organizationId, key);
  }
}

/**
 * At start: keys whose first request never finished (the last run crashed) are let go, so that a
 * retry runs rather than being refused for a day. A crash after that request's commit and before
 * its response was kept is the one case a retry then repeats.
 */
export async function releaseUnfinishedKeys(app: App): Promise<void> {
  const released = await app.store.idempotencyKeys.releaseUnfinished(app.clock.now());
  if (released) app.log.info("idempotency keys of requests the last run did not finish were let go", { keys: released });
}
