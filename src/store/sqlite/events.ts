/** The events table: written in the caller's transaction, with its webhook deliveries; read by the webhook queue. */
import type { Database } from "bun:sqlite";
import { newId } from "../../ids";
import type { NewEvent } from "../store";
import { storedPayload } from "./event-payload";
import type { WebhookSubscriptions } from "./webhook-subscriptions";

/** `recorded` is told of each event written (the store wakes the webhook queue once it is committed). */
export const eventsStore = (sqlite: Database, subscriptions: WebhookSubscriptions, recorded: () => void) => {
  // Raw statements: every send, receipt and delivery outcome emits one.
  const insertEvent = sqlite.query<never, { id: string; organizationId: string; type: string; inboxId: string | null; messageId: string | null; payload: string; createdAt: number }>(
    "INSERT INTO events (id, organization_id, type, inbox_id, message_id, payload, created_at) VALUES ($id, $organizationId, $type, $inboxId, $messageId, $payload, $createdAt)",
  );
  const queueDelivery = sqlite.query<never, [string, string, number]>(
    "INSERT INTO webhook_deliveries (webhook_id, event_id, status, attempts, next_attempt_at, created_at, updated_at) VALUES (?1, ?2, 'pending', 0, ?3, ?3, ?3)",
  );
  return {
    emit(event: NewEvent, now: number): string {
      const id = newId("evt");
      insertEvent.run({ id, organizationId: event.organizationId, type: event.type, inboxId: event.inboxId ?? null, messageId: event.messageId ?? null, payload: storedPayload(event.payload), createdAt: now });
      // One delivery per subscribed webhook, due at once. An INSERT … SELECT over json_each in
      // SQL cost three times as much per event, even for an organization without webhooks.
      for (const webhook of subscriptions.of(event.organizationId)) {
        if (webhook.events.has(event.type)) queueDelivery.run(webhook.id, id, now);
      }
      recorded();
      return id;
    },
  };
};
