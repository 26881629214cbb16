import { blob, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

export const acceptedInbound = sqliteTable("accepted_inbound", {
  id: integer("id").primaryKey({ autoIncrement: true }),
  envelope: text("envelope").notNull(),
  raw: blob("raw", { mode: "buffer" }).notNull(),
  blobId: text("blob_id"),
  size: integer("size").notNull(),
  attempts: integer("attempts").notNull(),
  nextAttemptAt: integer("next_attempt_at").notNull(),
  createdAt: integer("created_at").notNull(),
  peer: text("peer").notNull(),
});
