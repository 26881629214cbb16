/**
 * Inbound mail accepted and not analysed yet (migrations/0190): written in the transaction that
 * comes before the 250, claimed by the inbound queue one analysis at a time, and deleted in the
 * transaction that stores the message's copies. Prepared statements: each runs for every message.
 *
 * The message goes in a blob whatever its size (./blobs.ts), which the copies' sources then name
 * after their trace fields: stored inline, it was written here and again for each copy, and the
 * row the queue updates at every claim carried it. bench/smtp-ingest/catch-up.ts (4.4 kB messages):
 * 44 KiB written per message, WAL and checkpoints, against 55; a 20 MB message is written once.
 */
import type { AcceptedInbound, DueInbound, InboundEnvelope, QueueBacklog, StoredBytes } from "../store";
import { STAGE_THRESHOLD } from "../chunks";
import type { BlobStore } from "./blobs";
import type { Db } from "./db";

const EMPTY = new Uint8Array(0);

export const acceptedInboundStore = (db: Db, blobs: BlobStore) => {
  const sqlite = db.$client;
  const insert = sqlite.query<never, [string, string, Uint8Array, string | null, number, number]>(
    "INSERT INTO accepted_inbound (envelope, peer, raw, blob_id, size, next_attempt_at, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
  );
  // The oldest row is the first by id (acceptance order), found through the primary key: min(created_at)
  // read every row, each stored behind its message's bytes (4 ms for 8,000 rows, 41 ms for 100,000 in
  // memory), on the event loop at every metrics scrape while a backlog waited.
  const backlog = sqlite.query<QueueBacklog, []>(
    "SELECT (SELECT count(*) FROM accepted_inbound) AS depth, (SELECT created_at FROM accepted_inbound ORDER BY id LIMIT 1) AS oldestCreatedAt",
  );
  const nextDueAfter = sqlite.query<{ dueAt: number | null }, [number]>("SELECT min(next_attempt_at) AS dueAt FROM accepted_inbound WHERE next_attempt_at > ?1");
  const due = sqlite.query<DueInbound, [number, string, string, number]>(`
    SELECT id, size, attempts, peer FROM accepted_inbound
    WHERE next_attempt_at <= ?1 AND id NOT IN (SELECT value FROM json_each(?2)) AND peer NOT IN (SELECT value FROM json_each(?3))
    ORDER BY next_attempt_at, id LIMIT ?4`);
  const claim = sqlite.query<{ envelope: string; size: number; attempts: number; blobId: string | null }, [number, number]>(
    "UPDATE accepted_inbound SET attempts = attempts + 1, next_attempt_at = ?2 WHERE id = ?1 RETURNING envelope, size, attempts, blob_id AS blobId",
  );
  const source = sqlite.query<{ raw: Uint8Array; blobId: string | null; size: number }, [number]>("SELECT raw, blob_id AS blobId, size FROM accepted_inbound WHERE id = ?1");
  const release = sqlite.query<never, [number, number]>("UPDATE accepted_inbound SET attempts = attempts - 1, next_attempt_at = ?2 WHERE id = ?1");
  const remove = sqlite.query<{ blobId: string | null }, [number]>("DELETE FROM accepted_inbound WHERE id = ?1 RETURNING blob_id AS blobId");
  // Only a received copy's source names an accepted message's blob (message_sources_blob).
  const dropUnnamedChunks = sqlite.query<never, [string]>("DELETE FROM blob_chunks WHERE blob_id = ?1 AND NOT EXISTS (SELECT 1 FROM message_sources WHERE blob_id = ?1)");
  const resume = sqlite.query<never, [number]>("UPDATE accepted_inbound SET next_attempt_at = ?1 WHERE next_attempt_at > ?1");


  return {
    backlog: (): QueueBacklog => backlog.get()!,
    accept(envelope: InboundEnvelope, peer: string, raw: StoredBytes, size: number, now: number) {
      if (raw.blobId) blobs.claim(raw.blobId);
      insert.run(JSON.stringify(envelope), peer, EMPTY, raw.blobId ?? blobs.storeNow(raw.bytes), size, now);
    },
    nextDueAfter: (after: number): number | undefined => nextDueAfter.get(after)!.dueAt ?? undefined,
    due: (now: number, skip: { ids: readonly number[]; peers: readonly string[] }, limit: number): DueInbound[] => due.all(now, JSON.stringify(skip.ids), JSON.stringify(skip.peers), limit),
    claim(id: number, retryAt: number): AcceptedInbound | undefined {
      const row = claim.get(id, retryAt);
      if (!row) return undefined;
      return { id, envelope: JSON.parse(row.envelope) as InboundEnvelope, size: row.size, attempts: row.attempts, blobId: row.blobId };
    },
    async source(id: number): Promise<Buffer | undefined> {
      const row = source.get(id);
      if (!row) return undefined;
      if (!row.blobId) return Buffer.from(row.raw.buffer, row.raw.byteOffset, row.raw.byteLength);
      // A claim's transaction reads a small message (storeNow's one chunk); a connection turn there would wait for itself.
      return row.size <= STAGE_THRESHOLD ? blobs.read(row.blobId) : blobs.readInTurns(row.blobId, row.size);
    },
    release(id: number, now: number) {
      release.run(id, now);
    },
    // One process per data dir: nothing but its retry time holds a row.
    unclaim() {},
    finish(id: number) {
      const blobId = remove.get(id)?.blobId;
      if (blobId) dropUnnamedChunks.run(blobId);
    },
    resume(now: number) {
      resume.run(now);
    },
  };
};
