import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import type { EventName } from "../../../events/names";
import type { WebhookDeliveryStatus } from "../../../webhooks/policy";
import { timestamps } from "./columns";

export const webhooks = sqliteTable("webhooks", {
  id: text("id").primaryKey(),
  organizationId: text("organization_id").notNull(),
  url: text("url").notNull(),
  events: text("events", { mode: "json" }).$type<EventName[]>().notNull(),
  secret: text("secret").notNull(),
  enabled: integer("enabled", { mode: "boolean" }).notNull(),
  disabledReason: text("disabled_reason"),
  firstFailureAt: integer("first_failure_at"),
  ...timestamps,
});

export const webhookDeliveries = sqliteTable("webhook_deliveries", {
  id: integer("id").primaryKey(),
  webhookId: text("webhook_id").notNull(),
  eventId: text("event_id").notNull(),
  status: text("status").$type<WebhookDeliveryStatus>().notNull(),
  attempts: integer("attempts").notNull(),
  nextAttemptAt: integer("next_attempt_at"),
  ...timestamps,
});

export const webhookAttempts = sqliteTable("webhook_attempts", {
  id: text("id").primaryKey(),
  webhookId: text("webhook_id").notNull(),
  deliveryId: integer("delivery_id").notNull(),
  event: text("event").notNull(),
  url: text("url").notNull(),
  attemptNumber: integer("attempt_number").notNull(),
  statusCode: integer("status_code"),
  response: text("response"),
  success: integer("success", { mode: "boolean" }).notNull(),
  error: text("error"),
  finishedAt: integer("finished_at"),
  createdAt: integer("created_at").notNull(),
});
