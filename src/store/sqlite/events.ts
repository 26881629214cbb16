/** The events table: written in the caller's transaction, with its webhook deliveries; read by the webhook queue. */
import type { Database } from "bun:sqlite";
import { newId } from "../../ids";
import type { NewEvent } from "../store";
import { storedPayload } from "./event-payload";

/** `recorded` is told of each event written (the store wakes the webhook queue once it is committed). */
export const eventsStore = (sqlite: Database, recorded: () => void) => {
  // Raw statements: every send, receipt and delivery outcome emits one.
  const insertEvent = sqlite.query<never, { id: string; organizationId: string; type: string; inboxId: string | null; messageId: string | null; payload: string; createdAt: number }>(
    "INSERT INTO events (id, organization_id, type, inbox_id, message_id, payload, created_at) VALUES ($id, $organizationId, $type, $inboxId, $messageId, $payload, $createdAt)",
  );
  // One delivery per subscribed webhook, due at once, in the webhooks' creation order (the order
  // their deliveries are then tried in).
  const fanOut = sqlite.query<never, { id: string; organizationId: string; type: string; createdAt: number }>(`
    INSERT INTO webhook_deliveries (webhook_id, event_id, status, attempts, next_attempt_at, created_at, updated_at)
    SELECT w.id, $id, 'pending', 0, $createdAt, $createdAt, $createdAt
    FROM webhooks w
    WHERE w.organization_id = $organizationId
      AND w.enabled = 1
      AND EXISTS (SELECT 1 FROM json_each(w.events) WHERE json_each.value = $type)
    ORDER BY w.created_at, w.id`);
  return {
    emit(event: NewEvent, now: number): string {
      const id = newId("evt");
      insertEvent.run({ id, organizationId: event.organizationId, type: event.type, inboxId: event.inboxId ?? null, messageId: event.messageId ?? null, payload: storedPayload(event.payload), createdAt: now });
      fanOut.run({ id, organizationId: event.organizationId, type: event.type, createdAt: now });
      recorded();
      return id;
    },
  };
};
