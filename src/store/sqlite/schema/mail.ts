import { blob, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import type { Authentication } from "../../../smtp/authenticate";
import { timestamps } from "./columns";

export const inboxes = sqliteTable("inboxes", {
  id: text("id").primaryKey(),
  organizationId: text("organization_id").notNull(),
  name: text("name"),
  email: text("email").notNull(),
  ...timestamps,
});

export const threads = sqliteTable("threads", {
  id: text("id").primaryKey(),
  organizationId: text("organization_id").notNull(),
  inboxId: text("inbox_id").notNull(),
  subject: text("subject").notNull(),
  messageCount: integer("message_count").notNull(),
  lastMessageAt: integer("last_message_at").notNull(),
  ...timestamps,
});

export const messages = sqliteTable("messages", {
  id: text("id").primaryKey(),
  organizationId: text("organization_id").notNull(),
  inboxId: text("inbox_id").notNull(),
  threadId: text("thread_id").notNull(),
  fromInboxId: text("from_inbox_id"),
  toInboxId: text("to_inbox_id"),
  from: text("from_address").notNull(),
  fromName: text("from_name"),
  to: text("to_addresses", { mode: "json" }).$type<string[]>().notNull(),
  cc: text("cc_addresses", { mode: "json" }).$type<string[]>().notNull(),
  bcc: text("bcc_addresses", { mode: "json" }).$type<string[]>().notNull(),
  replyTo: text("reply_to_addresses", { mode: "json" }).$type<string[]>().notNull(),
  subject: text("subject").notNull(),
  text: text("text"),
  html: text("html"),
  labels: text("labels", { mode: "json" }).$type<string[]>().notNull(),
  read: integer("read", { mode: "boolean" }).notNull(),
  status: text("status").notNull(),
  messageIdHeader: text("message_id_header"),
  receivedDigest: text("received_digest"),
  inReplyTo: text("in_reply_to"),
  references: text("references_header", { mode: "json" }).$type<string[]>().notNull(),
  authentication: text("authentication", { mode: "json" }).$type<Authentication>(),
  externalMessageId: text("external_message_id"),
  ...timestamps,
});

export const messageSources = sqliteTable("message_sources", {
  messageId: text("message_id").primaryKey(),
  raw: blob("raw", { mode: "buffer" }).notNull(),
  /** Set when the source is in blob_chunks (src/store/blobs.ts); `raw` is empty then. */
  blobId: text("blob_id"),
});

export const attachments = sqliteTable("attachments", {
  id: text("id").primaryKey(),
  messageId: text("message_id").notNull(),
  position: integer("position").notNull(),
  name: text("name"),
  contentType: text("content_type"),
  contentId: text("content_id"),
  inline: integer("inline", { mode: "boolean" }).notNull(),
  content: blob("content", { mode: "buffer" }).notNull(),
  /** Set when the content is in blob_chunks (src/store/blobs.ts); stored empty then, read back whole. */
  blobId: text("blob_id"),
});

export const sendWindows = sqliteTable(
  "send_windows",
  {
    organizationId: text("organization_id").notNull(),
    windowStart: integer("window_start").notNull(),
    count: integer("count").notNull(),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.windowStart] })],
);

/** One row per label of a message (migration 0150), kept in step with messages.labels by triggers; what `?label=` reads. */
export const messageLabels = sqliteTable(
  "message_labels",
  {
    inboxId: text("inbox_id").notNull(),
    label: text("label").notNull(),
    createdAt: integer("created_at").notNull(),
    messageId: text("message_id").notNull(),
    threadId: text("thread_id").notNull(),
  },
  (t) => [primaryKey({ columns: [t.inboxId, t.label, t.createdAt, t.messageId] })],
);
