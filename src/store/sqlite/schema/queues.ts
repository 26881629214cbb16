import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { timestamps } from "./columns";

export const events = sqliteTable("events", {
  id: text("id").primaryKey(),
  organizationId: text("organization_id").notNull(),
  type: text("type").notNull(),
  inboxId: text("inbox_id"),
  messageId: text("message_id"),
  payload: text("payload").notNull(),
  createdAt: integer("created_at").notNull(),
});

export const deliveries = sqliteTable("deliveries", {
  id: text("id").primaryKey(),
  organizationId: text("organization_id").notNull(),
  messageId: text("message_id").notNull(),
  recipient: text("recipient").notNull(),
  domain: text("domain").notNull(),
  status: text("status").notNull(),
  attempts: integer("attempts").notNull(),
  lastResponse: text("last_response"),
  nextAttemptAt: integer("next_attempt_at"),
  ...timestamps,
});
