/**
 * The search index's catch-up (migration 0050): the messages a transaction wrote are noted in
 * messages_fts_pending and indexed with one statement just before it commits, so that FTS5 writes
 * one index segment per transaction rather than one per message.
 */
import type { Database } from "bun:sqlite";

export const searchIndexStore = (sqlite: Database) => {
  // Raw statements: they run in every transaction that writes messages.
  const anyPending = sqlite.query<{ pending: number }, []>("SELECT EXISTS (SELECT 1 FROM messages_fts_pending) AS pending");
  const indexPending = sqlite.query(
    "INSERT INTO messages_fts (rowid, subject, text, from_address) SELECT m.rowid, m.subject, m.text, m.from_address FROM messages_fts_pending p JOIN messages m ON m.rowid = p.message_rowid",
  );
  const clearPending = sqlite.query("DELETE FROM messages_fts_pending");
  return {
    /** Indexes the messages written in the current transaction; the store calls it last in each one. */
    catchUp() {
      if (!anyPending.get()!.pending) return;
      indexPending.run();
      clearPending.run();
    },
  };
};
