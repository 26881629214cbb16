import { integer, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import type { AccessAction, AccessDirection } from "../../../access/rules";
import type { DraftStatus } from "../../records";
import { bytea, jsonb, millis, timestamps } from "./columns";

export const drafts = pgTable("drafts", {
  id: text("id").primaryKey(),
  organizationId: text("organization_id").notNull(),
  inboxId: text("inbox_id").notNull(),
  threadId: text("thread_id"),
  inReplyToMessageId: text("in_reply_to_message_id"),
  to: jsonb<string[]>("to_addresses").notNull(),
  cc: jsonb<string[]>("cc_addresses").notNull(),
  bcc: jsonb<string[]>("bcc_addresses").notNull(),
  subject: text("subject"),
  text: text("text"),
  html: text("html"),
  labels: jsonb<string[]>("labels").notNull(),
  sendAt: millis("send_at"),
  status: text("status").$type<DraftStatus>().notNull(),
  messageId: text("message_id"),
  failureReason: text("failure_reason"),
  attempts: integer("attempts").notNull(),
  nextAttemptAt: millis("next_attempt_at"),
  /** The node whose claim holds a draft being sent (../leases.ts, migrations/postgres/0002_delivery.sql); null otherwise. */
  claimedBy: text("claimed_by"),
  leaseUntil: millis("lease_until"),
  ...timestamps,
});

export const draftAttachments = pgTable(
  "draft_attachments",
  {
    draftId: text("draft_id").notNull(),
    position: integer("position").notNull(),
    name: text("name"),
    contentType: text("content_type").notNull(),
    size: integer("size").notNull(),
    content: bytea("content").notNull(),
    blobId: text("blob_id"),
  },
  (t) => [primaryKey({ columns: [t.draftId, t.position] })],
);

export const idempotencyKeys = pgTable(
  "idempotency_keys",
  {
    organizationId: text("organization_id").notNull(),
    key: text("idempotency_key").notNull(),
    fingerprint: text("fingerprint").notNull(),
    statusCode: integer("status_code"),
    responseBody: bytea("response_body"),
    blobId: text("blob_id"),
    createdAt: millis("created_at").notNull(),
    expiresAt: millis("expires_at").notNull(),
    heldBy: text("held_by"),
    leaseUntil: millis("lease_until"),
    inboxId: text("inbox_id"),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.key] })],
);

export const accessRules = pgTable("access_rules", {
  id: text("id").primaryKey(),
  organizationId: text("organization_id").notNull(),
  inboxId: text("inbox_id"),
  direction: text("direction").$type<AccessDirection>().notNull(),
  action: text("action").$type<AccessAction>().notNull(),
  value: text("value").notNull(),
  ...timestamps,
});
