import { sqliteTable, text } from "drizzle-orm/sqlite-core";

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
