import { blob, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import type { DraftStatus } from "../../records";
import { timestamps } from "./columns";

export const drafts = sqliteTable("drafts", {
  id: text("id").primaryKey(),
  organizationId: text("organization_id").notNull(),
  inboxId: text("inbox_id").notNull(),
  threadId: text("thread_id"),
  inReplyToMessageId: text("in_reply_to_message_id"),
  to: text("to_addresses", { mode: "json" }).$type<string[]>().notNull(),
  cc: text("cc_addresses", { mode: "json" }).$type<string[]>().notNull(),
  bcc: text("bcc_addresses", { mode: "json" }).$type<string[]>().notNull(),
  subject: text("subject"),
  text: text("text"),
  html: text("html"),
  labels: text("labels", { mode: "json" }).$type<string[]>().notNull(),
  sendAt: integer("send_at"),
  status: text("status").$type<DraftStatus>().notNull(),
  messageId: text("message_id"),
  failureReason: text("failure_reason"),
  attempts: integer("attempts").notNull(),
  nextAttemptAt: integer("next_attempt_at"),
  ...timestamps,
});

export const draftAttachments = sqliteTable(
  "draft_attachments",
  {
    draftId: text("draft_id").notNull(),
    position: integer("position").notNull(),
    name: text("name"),
    contentType: text("content_type").notNull(),
    size: integer("size").notNull(),
    content: blob("content", { mode: "buffer" }).notNull(),
    /** Set when the content is in blob_chunks (src/store/sqlite/blobs.ts); stored empty then. */
    blobId: text("blob_id"),
  },
  (t) => [primaryKey({ columns: [t.draftId, t.position] })],
);
