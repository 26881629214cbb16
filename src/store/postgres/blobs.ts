/**
 * Large values, written before the transaction that stores their row, as the embedded engine does
 * (../sqlite/blobs.ts, migrations/0100_blob_chunks.sql): a value over STAGE_THRESHOLD goes in
 * chunks, each in a small transaction of its own that does not wait for the disk; the row's own
 * transaction claims the blob, and its commit flushes the WAL that holds the chunks before it.
 * Unclaimed blobs are discarded by the writer that gave up on them, or at the next start of their
 * node (or of any node once they are old: their node may never come back).
 */
import { sql } from "drizzle-orm";
import { takeTurn } from "../../event-loop";
import { newId } from "../../ids";
import { chunkedParts, headThenBlob, STAGE_THRESHOLD } from "../chunks";
import type { StoredBytes } from "../store";
import { firstRow, likePrefix, rowsOf, type PgDb } from "./db";
import { transactionInTime } from "./unavailable";

const EMPTY = new Uint8Array(0);

/** Claim and read, on the connection of the statement's transaction (a staged blob's rows are committed already). */
export function blobsOn(db: PgDb) {
  return {
    /** A value small enough for one statement, as a blob of one chunk, in the transaction of the row that names it. */
    async storeNow(bytes: Uint8Array): Promise<string> {
      const blobId = newId("blob");
      await db.execute(sql`INSERT INTO blob_chunks (blob_id, seq, bytes) VALUES (${blobId}, 0, ${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)})`);
      return blobId;
    },
    /** In the transaction of the row that names the blob: it is no longer an orphan. */
    async claim(blobId: string): Promise<void> {
      await db.execute(sql`DELETE FROM staged_blobs WHERE blob_id = ${blobId}`);
    },
    /**
     * A chunk per query and per turn of the event loop (takeTurn), into one buffer: read in one
     * query, a 20 MB blob's rows were decoded and joined in one turn (20-40 ms), as the embedded
     * engine's readInTurns avoids too.
     */
    async read(blobId: string): Promise<Buffer> {
      const [extent] = await rowsOf<{ chunks: number; size: number }>(db, sql`SELECT count(*)::int AS chunks, coalesce(sum(octet_length(bytes)), 0)::int AS size FROM blob_chunks WHERE blob_id = ${blobId}`);
      const whole = Buffer.allocUnsafe(extent!.size);
      let filled = 0;
      for (let seq = 0; seq < extent!.chunks; seq++) {
        await takeTurn();
        const chunk = await firstRow<{ bytes: Buffer }>(db, sql`SELECT bytes FROM blob_chunks WHERE blob_id = ${blobId} AND seq = ${seq}`);
        if (!chunk || filled + chunk.bytes.byteLength > whole.length) throw new Error(`blob ${blobId} lost chunk ${seq} while it was read`);
        whole.set(chunk.bytes, filled);
        filled += chunk.bytes.byteLength;
      }
      return whole;
    },
  };
}

export type PgBlobs = ReturnType<typeof blobsOn>;

/** A row read back whole: `content`, then its blob's bytes when it names one. */
export const withContent =
  (blobs: PgBlobs) =>
  async <T extends { content: Buffer; blobId: string | null }>(row: T): Promise<T> =>
    row.blobId ? { ...row, content: headThenBlob(row.content, await blobs.read(row.blobId)) } : row;

/** Staging and its clean-up, on the pool: each write is a transaction of its own; `holder` is this run of this node (../leases.ts). */
export function blobStaging(db: PgDb, holder: string) {
  // Each bounded (transactionInTime): one the server does not answer in time is rolled back, and its value discarded.
  const quickly = (write: (tx: PgDb) => Promise<unknown>) =>
    transactionInTime(db, async (tx) => {
      await tx.execute(sql`SET LOCAL synchronous_commit = off`);
      await write(tx);
    });
  const discard = (blobId: string) =>
    quickly(async (tx) => {
      await tx.execute(sql`DELETE FROM staged_blobs WHERE blob_id = ${blobId}`);
      await tx.execute(sql`DELETE FROM blob_chunks WHERE blob_id = ${blobId}`);
    });
  /** Values whose discard failed as their write had (the database out of reach): discarded with the next large value (../sqlite/blobs.ts does the same). */
  const leftBehind = new Set<string>();
  const discardOrLeave = async (blobId: string) => {
    try {
      await discard(blobId);
      leftBehind.delete(blobId);
    } catch {
      leftBehind.add(blobId);
    }
  };

  return {
    async prepare(parts: Uint8Array[], now: number): Promise<StoredBytes> {
      const size = parts.reduce((sum, part) => sum + part.byteLength, 0);
      if (size <= STAGE_THRESHOLD) return { bytes: parts.length === 1 ? parts[0]! : Buffer.concat(parts), blobId: null };
      for (const earlier of [...leftBehind]) await discardOrLeave(earlier);
      const blobId = newId("blob");
      try {
        await quickly((tx) => tx.execute(sql`INSERT INTO staged_blobs (blob_id, staged_by, created_at) VALUES (${blobId}, ${holder}, ${now})`));
        let seq = 0;
        for (const chunk of chunkedParts(parts)) {
          const n = seq++;
          await quickly((tx) => tx.execute(sql`INSERT INTO blob_chunks (blob_id, seq, bytes) VALUES (${blobId}, ${n}, ${Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)})`));
        }
      } catch (error) {
        await discardOrLeave(blobId);
        throw error;
      }
      return { bytes: EMPTY, blobId };
    },
    /** After that transaction: a prepared blob no row claimed (the write failed, or was a duplicate) is removed. */
    async release(blobIds: string[]): Promise<void> {
      for (const blobId of blobIds) {
        const staged = await rowsOf(db, sql`SELECT 1 FROM staged_blobs WHERE blob_id = ${blobId}`);
        if (staged.length > 0) await discard(blobId);
      }
    },
    /**
     * At start: blobs no row claimed that an earlier run of this node staged (a crash stopped it), and
     * those of any node staged before `before`. Other nodes may be staging blobs right now: theirs go
     * only once older than any write still under way.
     */
    async removeOrphans(before: number): Promise<number> {
      const node = holder.slice(0, holder.lastIndexOf("#") + 1);
      const orphans = await rowsOf<{ blobId: string }>(
        db,
        sql`SELECT blob_id AS "blobId" FROM staged_blobs WHERE created_at < ${before} OR (staged_by LIKE ${likePrefix(node)} AND staged_by <> ${holder})`,
      );
      for (const { blobId } of orphans) await discard(blobId);
      return orphans.length;
    },
  };
}
