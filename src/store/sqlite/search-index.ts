/**
 * The search index's catch-up. A message written notes its rowid in messages_fts_pending (its
 * insert trigger, migration 0050) and is indexed later, many messages per statement, in a
 * transaction of their own: FTS5 costs 230-290 µs of the event loop per message of a few kB
 * whatever the batch (16 to 1,024 per statement), and the transactions that store mail (the
 * inbound queue's, a send's) no longer carry it. The store's maintenance indexes the noted
 * messages in the background (./search-indexing.ts), and a search first indexes what is still
 * noted, so that it sees every message committed before it, as when each transaction indexed its
 * own messages before its commit.
 */
import type { Database } from "bun:sqlite";
import { SEARCHED_TEXT_CHARS } from "../searched-text";

/** Messages indexed per transaction at most, and bytes of their subjects and texts (at least one message). */
export const SEARCH_INDEX_BATCH = 64;
// FTS5 costs the event loop about 0.17 µs per byte of text (230-290 µs for this machine's 1.5 kB
// bench texts): a full batch holds it for about 20 ms.
const SEARCH_INDEX_BATCH_BYTES = 128 * 1024;

export const searchIndexStore = (sqlite: Database) => {
  // Raw statements: the indexing runs often, and drizzle has no FTS5.
  // Rowids are given in order of writing, so that the span of the noted ones bounds their count.
  const pendingSpan = sqlite.query<{ span: number | null }, []>("SELECT max(message_rowid) - min(message_rowid) + 1 AS span FROM messages_fts_pending");
  // octet_length, not length: SQLite reads it from the row's header, without the text itself.
  const oldest = sqlite.query<{ rowid: number; bytes: number }, [number]>(
    "SELECT p.message_rowid AS rowid, octet_length(m.subject) + coalesce(octet_length(m.text), 0) AS bytes FROM messages_fts_pending p JOIN messages m ON m.rowid = p.message_rowid ORDER BY p.message_rowid LIMIT ?1",
  );
  // The text as far as SEARCHED_TEXT_CHARS, as the triggers of migration 0250 take it out again.
  const indexUpTo = sqlite.query<never, [number]>(
    `INSERT INTO messages_fts (rowid, subject, text, from_address) SELECT rowid, subject, substr(text, 1, ${SEARCHED_TEXT_CHARS}), from_address FROM messages WHERE rowid IN (SELECT message_rowid FROM messages_fts_pending WHERE message_rowid <= ?1)`,
  );
  const clearUpTo = sqlite.query<never, [number]>("DELETE FROM messages_fts_pending WHERE message_rowid <= ?1");
  /** Indexes the noted messages up to `rowid`, in the caller's transaction; how many. */
  const indexNotedUpTo = (rowid: number): number => {
    indexUpTo.run(rowid);
    return clearUpTo.run(rowid).changes;
  };
  return {
    /** An upper bound of the messages that wait for the index (0: none). */
    pendingAtMost: () => pendingSpan.get()!.span ?? 0,
    /**
     * Indexes the messages that wait longest, in the caller's transaction: up to SEARCH_INDEX_BATCH
     * and SEARCH_INDEX_BATCH_BYTES, so that a batch of long texts holds the event loop no longer
     * than one of short ones (FTS5's cost follows the text). How many it indexed.
     */
    indexBatch(): number {
      let bytes = 0;
      let last: number | undefined;
      for (const row of oldest.all(SEARCH_INDEX_BATCH)) {
        if (last !== undefined && bytes + row.bytes > SEARCH_INDEX_BATCH_BYTES) break;
        bytes += row.bytes;
        last = row.rowid;
      }
      return last === undefined ? 0 : indexNotedUpTo(last);
    },
    /** Every message that waits (a copy into a new database). */
    indexAll: () => indexNotedUpTo(Number.MAX_SAFE_INTEGER),
  };
};
