import { bigint, boolean, integer, pgTable, text } from "drizzle-orm/pg-core";
import { jsonb, millis, timestamps } from "./columns";
import type { EventName } from "../../../events/names";
import type { WebhookDeliveryStatus } from "../../../webhooks/policy";

export const webhooks = pgTable("webhooks", {
  id: text("id").primaryKey(),
  organizationId: text("organization_id").notNull(),
  url: text("url").notNull(),
  events: jsonb<EventName[]>("events").notNull(),
  secret: text("secret").notNull(),
  enabled: boolean("enabled").notNull(),
  disabledReason: text("disabled_reason"),
  firstFailureAt: millis("first_failure_at"),
  ...timestamps,
});

export const webhookDeliveries = pgTable("webhook_deliveries", {
  id: bigint("id", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity(),
  webhookId: text("webhook_id").notNull(),
  eventId: text("event_id").notNull(),
  status: text("status").$type<WebhookDeliveryStatus>().notNull(),
  attempts: integer("attempts").notNull(),
  nextAttemptAt: millis("next_attempt_at"),
  /** The node run whose claim holds the row, and until when (../leases.ts); null when no try is under way. */
  claimedBy: text("claimed_by"),
  leaseUntil: millis("lease_until"),
  ...timestamps,
});

export const webhookAttempts = pgTable("webhook_attempts", {
  id: text("id").primaryKey(),
  /** Insertion order: breaks ties within one millisecond, as SQLite's rowid does. */
  seq: bigint("seq", { mode: "number" }).generatedByDefaultAsIdentity(),
  webhookId: text("webhook_id").notNull(),
  deliveryId: bigint("delivery_id", { mode: "number" }).notNull(),
  event: text("event").notNull(),
  url: text("url").notNull(),
  attemptNumber: integer("attempt_number").notNull(),
  statusCode: integer("status_code"),
  response: text("response"),
  success: boolean("success").notNull(),
  error: text("error"),
  finishedAt: millis("finished_at"),
  createdAt: millis("created_at").notNull(),
});
