/** Idempotency keys per organization with the first request's final response (migrations/0140). */
import { and, eq, isNull, lte } from "drizzle-orm";
import type { StoredBytes } from "../store";
import type { BlobStore } from "./blobs";
import type { Db } from "./db";
import { idempotencyKeys } from "./schema/index";

export type IdempotencyKeyRow = typeof idempotencyKeys.$inferSelect;

const EMPTY = Buffer.alloc(0);

export const idempotencyKeysStore = (db: Db, blobs: BlobStore) => {
  const held = (organizationId: string, key: string) => and(eq(idempotencyKeys.organizationId, organizationId), eq(idempotencyKeys.key, key));
  return {
    begin(row: IdempotencyKeyRow, now: number): IdempotencyKeyRow | undefined {
      // Expired keys go as new ones come: an index range that is empty but for the odd expired row.
      db.delete(idempotencyKeys).where(lte(idempotencyKeys.expiresAt, now)).run();
      const existing = db.select().from(idempotencyKeys).where(held(row.organizationId, row.key)).get();
      if (existing) return existing.blobId ? { ...existing, responseBody: blobs.read(existing.blobId) } : existing;
      db.insert(idempotencyKeys).values(row).run();
      return undefined;
    },
    complete(organizationId: string, key: string, statusCode: number, body: StoredBytes) {
      const kept = db
        .update(idempotencyKeys)
        .set({ statusCode, responseBody: body.blobId ? EMPTY : Buffer.from(body.bytes), blobId: body.blobId })
        .where(and(held(organizationId, key), isNull(idempotencyKeys.statusCode)))
        .returning({ key: idempotencyKeys.key })
        .all();
      if (kept.length > 0 && body.blobId) blobs.claim(body.blobId);
    },
    release(organizationId: string, key: string) {
      db.delete(idempotencyKeys).where(held(organizationId, key)).run();
    },
    forgetInbox(organizationId: string, inboxId: string) {
      db.delete(idempotencyKeys).where(and(eq(idempotencyKeys.inboxId, inboxId), eq(idempotencyKeys.organizationId, organizationId))).run();
    },
    /**
     * Called as the server starts, before it takes a request: one process per data dir, so every
     * key still running is an earlier run's. Told apart by the time of the request instead, one
     * made by a run whose clock was ahead stayed held (409) past the restart.
     */
    releaseUnfinished(): number {
      return db.delete(idempotencyKeys).where(isNull(idempotencyKeys.statusCode)).returning().all().length;
    },
  };
};
