import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * The FTS5 index of messages (migration 0040): external content on messages' rowid, kept in step
 * by triggers. Queried with MATCH through raw SQL in store/message-search.ts; declared here so the
 * schema lists every table.
 */
export const messagesFts = sqliteTable("messages_fts", {
  subject: text("subject"),
  text: text("text"),
  fromAddress: text("from_address"),
});

/** Messages written in the current transaction and not indexed yet (migration 0050); empty between transactions. */
export const messagesFtsPending = sqliteTable("messages_fts_pending", {
  messageRowid: integer("message_rowid").primaryKey(),
});
