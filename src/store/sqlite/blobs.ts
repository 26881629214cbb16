/**
 * Large values, written before the transaction that stores their message (migrations/0100).
 * SQLite writes a value in one statement: 20 MB at 4 KiB pages holds the event loop for about
 * 350 ms, and every SMTP session and HTTP request with it. A value over STAGE_THRESHOLD is
 * instead written in chunks, each in a small transaction of its own, one chunk per turn of the
 * event loop, taking turns with every other such work of the process (src/event-loop.ts: ten
 * big messages cost ten times as many turns, not ten times as long a turn). Those commits do not
 * wait for the disk: the message's own transaction claims the blob, and the WAL sync of its
 * commit (group commit) makes every frame written before it durable with it. Unclaimed blobs are discarded by the writer that gave up on
 * them (by the next large value when that failed too), or at the next start after a crash.
 */
import type { Database } from "bun:sqlite";
import { commitWithoutWaitingForDisk } from "./open";
import { takeTurn } from "../../event-loop";
import { newId } from "../../ids";
import { chunkedParts, headThenBlob, STAGE_THRESHOLD } from "../chunks";
import type { StoredBytes } from "../store";

const EMPTY = new Uint8Array(0);

/**
 * `inConnectionTurn` runs a write when the connection is free (./turns.ts): a chunk must not land in
 * another request's transaction.
 */
export function blobStore(sqlite: Database, inConnectionTurn: <T>(write: () => T) => Promise<T>) {
  const insertStaged = sqlite.query<never, [string, number]>("INSERT INTO staged_blobs (blob_id, created_at) VALUES (?1, ?2)");
  const insertChunk = sqlite.query<never, [string, number, Uint8Array]>("INSERT INTO blob_chunks (blob_id, seq, bytes) VALUES (?1, ?2, ?3)");
  const unstage = sqlite.query<never, [string]>("DELETE FROM staged_blobs WHERE blob_id = ?1");
  const dropChunks = sqlite.query<never, [string]>("DELETE FROM blob_chunks WHERE blob_id = ?1");
  const stillStaged = sqlite.query<{ n: number }, [string]>("SELECT count(*) AS n FROM staged_blobs WHERE blob_id = ?1");
  const chunksOf = sqlite.query<{ bytes: Uint8Array }, [string]>("SELECT bytes FROM blob_chunks WHERE blob_id = ?1 ORDER BY seq");
  const chunkAt = sqlite.query<{ bytes: Uint8Array }, [string, number]>("SELECT bytes FROM blob_chunks WHERE blob_id = ?1 AND seq = ?2");
  const orphans = sqlite.query<{ blobId: string }, []>("SELECT blob_id AS blobId FROM staged_blobs");

  /** Writes in a turn of the event loop of its own (takeTurn), committed without waiting for the disk. */
  const inTurn = async (write: () => void): Promise<void> => {
    await takeTurn();
    await inConnectionTurn(() => commitWithoutWaitingForDisk(sqlite, () => sqlite.transaction(write).immediate()));
  };
  const discard = (blobId: string) =>
    commitWithoutWaitingForDisk(sqlite, () =>
      sqlite
        .transaction(() => {
          unstage.run(blobId);
          dropChunks.run(blobId);
        })
        .immediate(),
    );

  /**
   * Blobs whose discard failed as their write had (a full disk fails both): discarded with the next
   * large value, once the disk takes writes again. They stayed until the next start, a few MB for
   * each large message a sender retried while the disk was full.
   */
  const leftBehind = new Set<string>();
  const discardOrLeave = async (blobId: string) => {
    try {
      await inConnectionTurn(() => discard(blobId));
      leftBehind.delete(blobId);
    } catch {
      leftBehind.add(blobId);
    }
  };

  return {
    /**
     * The bytes of `parts`, one after the other, as they will be stored: in their row when small,
     * else staged chunk by chunk (call outside any transaction). Parts spare the caller a copy of
     * a large message to put a few header lines before it.
     */
    async prepare(parts: Uint8Array[], now: number): Promise<StoredBytes> {
      const size = parts.reduce((sum, part) => sum + part.byteLength, 0);
      if (size <= STAGE_THRESHOLD) return { bytes: parts.length === 1 ? parts[0]! : Buffer.concat(parts), blobId: null };
      for (const earlier of [...leftBehind]) await discardOrLeave(earlier);
      const blobId = newId("blob");
      try {
        await inTurn(() => insertStaged.run(blobId, now));
        let seq = 0;
        for (const chunk of chunkedParts(parts)) {
          const n = seq++;
          await inTurn(() => insertChunk.run(blobId, n, chunk));
        }
      } catch (error) {
        await discardOrLeave(blobId);
        throw error;
      }
      return { bytes: EMPTY, blobId };
    },
    /** A value small enough for one statement, as a blob of one chunk, in the caller's transaction (which names it). */
    storeNow(bytes: Uint8Array): string {
      const blobId = newId("blob");
      insertChunk.run(blobId, 0, bytes);
      return blobId;
    },
    /** In the transaction of the row that names the blob: it is no longer an orphan. */
    claim(blobId: string): void {
      unstage.run(blobId);
    },
    /** After that transaction: a prepared blob no row claimed (the write failed, or was a duplicate) is removed. */
    release(blobIds: string[]): void {
      for (const blobId of blobIds) if (stillStaged.get(blobId)!.n > 0) discard(blobId);
    },
    /** In the caller's turn (in its transaction, where it has one); a blob of one chunk (storeNow's) without a copy. */
    read(blobId: string): Buffer {
      const chunks = chunksOf.all(blobId).map((row) => Buffer.from(row.bytes.buffer, row.bytes.byteOffset, row.bytes.byteLength));
      return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    },
    /**
     * As `read`, a chunk per turn of the event loop (takeTurn), into one buffer of `size` bytes:
     * no slice holds the loop longer than a chunk's copy. Its own buffer, so that it can move to
     * another thread without a copy.
     */
    async readInTurns(blobId: string, size: number): Promise<Buffer> {
      const whole = Buffer.allocUnsafeSlow(size);
      let filled = 0;
      for (let seq = 0; filled < size; seq++) {
        await takeTurn();
        const chunk = await inConnectionTurn(() => chunkAt.get(blobId, seq));
        if (!chunk || filled + chunk.bytes.byteLength > size) throw new Error(`blob ${blobId} does not hold ${size} bytes`);
        whole.set(chunk.bytes, filled);
        filled += chunk.bytes.byteLength;
      }
      return whole;
    },
    /** At start: the blobs of writers that a crash stopped before their message was stored. */
    removeOrphans(): number {
      const found = orphans.all();
      for (const { blobId } of found) discard(blobId);
      return found.length;
    },
  };
}

export type BlobStore = ReturnType<typeof blobStore>;

/** A row read back whole: `content`, then its blob's bytes when it names one. */
export const withContent =
  (blobs: BlobStore) =>
  <T extends { content: Buffer; blobId: string | null }>(row: T): T =>
    row.blobId ? { ...row, content: headThenBlob(row.content, blobs.read(row.blobId)) } : row;
