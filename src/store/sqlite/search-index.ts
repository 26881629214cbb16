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

export const searchIndexStore = (sqlite: Database) => {
  // Raw statements: the indexing runs often, and drizzle has no FTS5.
  const anyPending = sqlite.query<{ pending: number }, []>("SELECT EXISTS (SELECT 1 FROM messages_fts_pending) AS pending");
  // Rowids are given in order of writing, so that the span of the noted ones bounds their count.
  const pendingSpan = sqlite.query<{ span: number | null }, []>("SELECT max(message_rowid) - min(message_rowid) + 1 AS span FROM messages_fts_pending");
  const oldest = "SELECT message_rowid FROM messages_fts_pending ORDER BY message_rowid LIMIT ?1";
  const indexOldest = sqlite.query<never, [number]>(`INSERT INTO messages_fts (rowid, subject, text, from_address) SELECT rowid, subject, text, from_address FROM messages WHERE rowid IN (${oldest})`);
  const clearOldest = sqlite.query<never, [number]>(`DELETE FROM messages_fts_pending WHERE message_rowid IN (${oldest})`);
  /** Indexes the `limit` messages that wait longest (-1: all), in the caller's transaction; how many it indexed. */
  const indexOldestNoted = (limit: number): number => {
    indexOldest.run(limit);
    return clearOldest.run(limit).changes;
  };
  return {
    /** Whether any message waits for the index. */
    pending: () => anyPending.get()!.pending === 1,
    /** An upper bound of the messages that wait for the index (0: none). */
    pendingAtMost: () => pendingSpan.get()!.span ?? 0,
    indexOldest: indexOldestNoted,
    /** Every message that waits (a copy into a new database). */
    indexAll: () => indexOldestNoted(-1),
  };
};

