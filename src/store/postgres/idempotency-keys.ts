/** Idempotency keys per organization with the first request's final response (../sqlite/idempotency-keys.ts). */
import { and, eq, isNull, lt, lte, or } from "drizzle-orm";
import type { IdempotencyKeysStore } from "../store";
import type { PgBlobs } from "./blobs";
import type { PgDb } from "./db";
import { heldByEarlierRuns, type Leases } from "./leases";
import { idempotencyKeys } from "./schema/index";

const EMPTY = Buffer.alloc(0);

/** A request that has held its key this long is no request any more: its node died without restarting. */
const ABANDONED_MS = 60 * 60_000;

export function idempotencyKeysStore(db: PgDb, blobs: PgBlobs, leases: Leases): IdempotencyKeysStore {
  const held = (organizationId: string, key: string) => and(eq(idempotencyKeys.organizationId, organizationId), eq(idempotencyKeys.key, key));
  return {
    /**
     * ON CONFLICT DO NOTHING: of two requests with one key on two nodes, one records it and the
     * other reads it. A key whose request's node stopped renewing its lease (it died mid-request)
     * is taken over, as a restart of that node would free it: its retry on another node got 409
     * until then, for up to a day.
     */
    async begin(row, now) {
      await db.delete(idempotencyKeys).where(lte(idempotencyKeys.expiresAt, now));
      const holding = { heldBy: leases.holder, leaseUntil: leases.until() };
      const inserted = await db.insert(idempotencyKeys).values({ ...row, ...holding }).onConflictDoNothing().returning({ key: idempotencyKeys.key });
      if (inserted.length > 0) return undefined;
      const takenOver = await db
        .update(idempotencyKeys)
        .set({ ...row, ...holding })
        .where(and(held(row.organizationId, row.key), isNull(idempotencyKeys.statusCode), lte(idempotencyKeys.leaseUntil, now)))
        .returning({ key: idempotencyKeys.key });
      if (takenOver.length > 0) return undefined;
      const [existing] = await db.select().from(idempotencyKeys).where(held(row.organizationId, row.key));
      if (!existing) return undefined;
      return existing.blobId ? { ...existing, responseBody: await blobs.read(existing.blobId) } : existing;
    },
    async complete(organizationId, key, statusCode, body) {
      const kept = await db
        .update(idempotencyKeys)
        .set({ statusCode, responseBody: body.blobId ? EMPTY : Buffer.from(body.bytes), blobId: body.blobId })
        // Still this node's: another took it over only once this one's lease had run out.
        .where(and(held(organizationId, key), isNull(idempotencyKeys.statusCode), eq(idempotencyKeys.heldBy, leases.holder)))
        .returning({ key: idempotencyKeys.key });
      if (kept.length > 0 && body.blobId) await blobs.claim(body.blobId);
    },
    async release(organizationId, key) {
      await db.delete(idempotencyKeys).where(held(organizationId, key));
    },
    async forgetInbox(organizationId, inboxId) {
      await db.delete(idempotencyKeys).where(and(eq(idempotencyKeys.inboxId, inboxId), eq(idempotencyKeys.organizationId, organizationId)));
    },
    /** Never a key another live node's request holds: those of this node's earlier runs, and the abandoned. */
    async releaseUnfinished(startedAt) {
      const gone = await db
        .delete(idempotencyKeys)
        .where(and(isNull(idempotencyKeys.statusCode), or(heldByEarlierRuns(leases, "held_by"), lt(idempotencyKeys.createdAt, startedAt - ABANDONED_MS))))
        .returning({ key: idempotencyKeys.key });
      return gone.length;
    },
  };
}
