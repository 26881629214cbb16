/**
 * Inbound mail accepted and not analysed yet, as ../sqlite/accepted-inbound.ts: written in the
 * transaction that comes before the 250, claimed by one node's inbound queue at a time (FOR
 * UPDATE SKIP LOCKED, then a lease: ./leases.ts), and deleted in the transaction that stores the
 * message's copies. The message goes in a blob whatever its size, which the copies' sources name
 * (../sqlite/accepted-inbound.ts says why).
 */
import { sql } from "drizzle-orm";
import type { AcceptedInbound, AcceptedInboundStore, DueInbound, InboundEnvelope, QueueBacklog, StoredBytes } from "../store";
import type { PgBlobs } from "./blobs";
import { firstRow, rowsOf, type PgDb } from "./db";
import { unheld, type Leases } from "./leases";
import { numbersOf, textsOf } from "./lists";

const EMPTY = Buffer.alloc(0);

export function acceptedInboundStore(db: PgDb, blobs: PgBlobs, leases: Leases): AcceptedInboundStore {
  const sourceOf = async (row: { raw: Buffer; blobId: string | null }): Promise<Buffer> => (row.blobId ? blobs.read(row.blobId) : row.raw);
  return {
    async backlog(): Promise<QueueBacklog> {
      return (await firstRow<QueueBacklog>(db, sql`SELECT count(*)::int AS depth, min(created_at)::float8 AS "oldestCreatedAt" FROM accepted_inbound`))!;
    },
    async accept(envelope: InboundEnvelope, peer: string, raw: StoredBytes, size: number, now: number): Promise<void> {
      if (raw.blobId) await blobs.claim(raw.blobId);
      const blobId = raw.blobId ?? (await blobs.storeNow(raw.bytes));
      await db.execute(sql`
        INSERT INTO accepted_inbound (envelope, peer, raw, blob_id, size, next_attempt_at, created_at)
        VALUES (${JSON.stringify(envelope)}::text::jsonb, ${peer}, ${EMPTY}, ${blobId}, ${size}, ${now}, ${now})`);
    },
    async nextDueAfter(after: number): Promise<number | undefined> {
      const row = await firstRow<{ dueAt: number | null }>(db, sql`SELECT min(next_attempt_at)::float8 AS "dueAt" FROM accepted_inbound WHERE next_attempt_at > ${after}`);
      return row?.dueAt ?? undefined;
    },
    /** Locked as read, for the claims that follow in the same transaction: another node's turn passes them over. */
    async due(now: number, skip: { ids: readonly number[]; peers: readonly string[] }, limit: number): Promise<DueInbound[]> {
      return rowsOf(db, sql`
        SELECT id::float8 AS id, size, attempts, peer FROM accepted_inbound
        WHERE next_attempt_at <= ${now} AND ${unheld(now)} AND id NOT IN ${numbersOf(skip.ids)} AND peer NOT IN ${textsOf(skip.peers)}
        ORDER BY next_attempt_at, id LIMIT ${limit}
        FOR UPDATE SKIP LOCKED`);
    },
    /** And leases the row to this node until the analysis is stored or given back (./leases.ts). */
    async claim(id: number, retryAt: number): Promise<AcceptedInbound | undefined> {
      const row = await firstRow<{ envelope: InboundEnvelope; size: number; attempts: number; blobId: string | null }>(db, sql`
        UPDATE accepted_inbound SET attempts = attempts + 1, next_attempt_at = ${retryAt}, claimed_by = ${leases.holder}, lease_until = ${leases.until()}
        WHERE id = ${id} RETURNING envelope, size, attempts, blob_id AS "blobId"`);
      if (!row) return undefined;
      return { id, envelope: row.envelope, size: row.size, attempts: row.attempts, blobId: row.blobId };
    },
    async source(id: number): Promise<Buffer | undefined> {
      const row = await firstRow<{ raw: Buffer; blobId: string | null }>(db, sql`SELECT raw, blob_id AS "blobId" FROM accepted_inbound WHERE id = ${id}`);
      return row && sourceOf(row);
    },
    async unclaim(id: number): Promise<void> {
      await db.execute(sql`UPDATE accepted_inbound SET claimed_by = NULL, lease_until = NULL WHERE id = ${id} AND claimed_by = ${leases.holder}`);
    },
    async release(id: number, now: number): Promise<void> {
      await db.execute(sql`UPDATE accepted_inbound SET attempts = attempts - 1, next_attempt_at = ${now}, claimed_by = NULL, lease_until = NULL WHERE id = ${id} AND claimed_by = ${leases.holder}`);
    },
    /**
     * Throws when the row is gone: a node that outlived its lease finds its message stored by the
     * node that took it over, and its own copies roll back with the savepoint this runs in.
     */
    async finish(id: number): Promise<void> {
      const row = await firstRow<{ blobId: string | null }>(db, sql`DELETE FROM accepted_inbound WHERE id = ${id} RETURNING blob_id AS "blobId"`);
      if (!row) throw new Error(`accepted message ${id} was stored by another node (this node's claim had run out)`);
      // Only a received copy's source names an accepted message's blob.
      if (row.blobId) await db.execute(sql`DELETE FROM blob_chunks WHERE blob_id = ${row.blobId} AND NOT EXISTS (SELECT 1 FROM message_sources WHERE blob_id = ${row.blobId})`);
    },
    /**
     * Done as the store opened (./leases.ts: releaseEarlierRuns): what this node's earlier runs
     * claimed is due now; what other nodes hold is theirs, or falls due when their leases run out.
     */
    async resume(_now: number): Promise<void> {},
  };
}
