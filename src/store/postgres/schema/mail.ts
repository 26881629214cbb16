import { boolean, integer, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import type { Authentication } from "../../../smtp/authenticate";
import { bytea, jsonb, millis, timestamps } from "./columns";

export const inboxes = pgTable("inboxes", {
  id: text("id").primaryKey(),
  organizationId: text("organization_id").notNull(),
  name: text("name"),
  email: text("email").notNull(),
  ...timestamps,
});

export const threads = pgTable("threads", {
  id: text("id").primaryKey(),
  organizationId: text("organization_id").notNull(),
  inboxId: text("inbox_id").notNull(),
  subject: text("subject").notNull(),
  messageCount: integer("message_count").notNull(),
  lastMessageAt: millis("last_message_at").notNull(),
  ...timestamps,
});

export const messages = pgTable("messages", {
  id: text("id").primaryKey(),
  organizationId: text("organization_id").notNull(),
  inboxId: text("inbox_id").notNull(),
  threadId: text("thread_id").notNull(),
  fromInboxId: text("from_inbox_id"),
  toInboxId: text("to_inbox_id"),
  from: text("from_address").notNull(),
  fromName: text("from_name"),
  to: jsonb<string[]>("to_addresses").notNull(),
  cc: jsonb<string[]>("cc_addresses").notNull(),
  bcc: jsonb<string[]>("bcc_addresses").notNull(),
  replyTo: jsonb<string[]>("reply_to_addresses").notNull(),
  subject: text("subject").notNull(),
  text: text("text"),
  html: text("html"),
  labels: jsonb<string[]>("labels").notNull(),
  read: boolean("read").notNull(),
  status: text("status").notNull(),
  messageIdHeader: text("message_id_header"),
  receivedDigest: text("received_digest"),
  inReplyTo: text("in_reply_to"),
  references: jsonb<string[]>("references_header").notNull(),
  authentication: jsonb<Authentication>("authentication"),
  externalMessageId: text("external_message_id"),
  ...timestamps,
});

export const messageSources = pgTable("message_sources", {
  messageId: text("message_id").primaryKey(),
  raw: bytea("raw").notNull(),
  /** Set when the source is in blob_chunks (../blobs.ts); `raw` is empty then. */
  blobId: text("blob_id"),
});

export const attachments = pgTable("attachments", {
  id: text("id").primaryKey(),
  messageId: text("message_id").notNull(),
  position: integer("position").notNull(),
  name: text("name"),
  contentType: text("content_type"),
  contentId: text("content_id"),
  inline: boolean("inline").notNull(),
  content: bytea("content").notNull(),
  /** Set when the content is in blob_chunks (../blobs.ts); stored empty then, read back whole. */
  blobId: text("blob_id"),
});

/** One row per label of a message, kept in step with messages.labels by a trigger (migrations/postgres/0001_mail.sql). */
export const messageLabels = pgTable(
  "message_labels",
  {
    inboxId: text("inbox_id").notNull(),
    label: text("label").notNull(),
    createdAt: millis("created_at").notNull(),
    messageId: text("message_id").notNull(),
    threadId: text("thread_id").notNull(),
  },
  (t) => [primaryKey({ columns: [t.inboxId, t.label, t.createdAt, t.messageId] })],
);

export const sendWindows = pgTable(
  "send_windows",
  {
    organizationId: text("organization_id").notNull(),
    windowStart: millis("window_start").notNull(),
    count: integer("count").notNull(),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.windowStart] })],
);

export const events = pgTable("events", {
  id: text("id").primaryKey(),
  organizationId: text("organization_id").notNull(),
  type: text("type").notNull(),
  inboxId: text("inbox_id"),
  messageId: text("message_id"),
  payload: text("payload").notNull(),
  createdAt: millis("created_at").notNull(),
});

export const blobChunks = pgTable(
  "blob_chunks",
  {
    blobId: text("blob_id").notNull(),
    seq: integer("seq").notNull(),
    bytes: bytea("bytes").notNull(),
  },
  (t) => [primaryKey({ columns: [t.blobId, t.seq] })],
);

export const stagedBlobs = pgTable("staged_blobs", {
  blobId: text("blob_id").primaryKey(),
  /** The run of the node writing it (../leases.ts `holder`). */
  stagedBy: text("staged_by").notNull(),
  createdAt: millis("created_at").notNull(),
});
