/** The events table: written in the caller's transaction, with its webhook deliveries; read by the webhook queue and the event stream. */
import type { Database } from "bun:sqlite";
import { testEventIdPrefix } from "../../events/names";
import { eventIdAfter } from "../event-ids";
import type { EventRecord } from "../records";
import type { EventPage, EventRead, NewEvent } from "../store";
import type { BlobStore } from "./blobs";
import { payloadReader, storedPayload } from "./event-payload";
import type { WebhookSubscriptions } from "./webhook-subscriptions";

/**
 * `recorded` is told of each event written (the store wakes the webhook queue and the event
 * streams once it is on disk); reads show events up to `visibleUpTo` (./event-watermark.ts).
 */
export const eventsStore = (sqlite: Database, subscriptions: WebhookSubscriptions, blobs: BlobStore, recorded: (id: string) => void, visibleUpTo: () => string | null) => {
  // Raw statements: every send, receipt and delivery outcome emits one.
  const insertEvent = sqlite.query<never, { id: string; organizationId: string; type: string; inboxId: string | null; messageId: string | null; payload: string; createdAt: number }>(
    "INSERT INTO events (id, organization_id, type, inbox_id, message_id, payload, created_at) VALUES ($id, $organizationId, $type, $inboxId, $messageId, $payload, $createdAt)",
  );
  const queueDelivery = sqlite.query<never, [string, string, number]>(
    "INSERT INTO webhook_deliveries (webhook_id, event_id, status, attempts, next_attempt_at, created_at, updated_at) VALUES (?1, ?2, 'pending', 0, ?3, ?3, ?3)",
  );
  // Ids below the test events' prefix: the range of the index on (organization_id, id) that holds the events of changes.
  const eventsAfter = sqlite.query<EventRecord, { organizationId: string; afterId: string; below: string; upTo: string | null; types: string | null; inboxId: string | null; limit: number }>(
    `SELECT id, organization_id AS organizationId, type, inbox_id AS inboxId, message_id AS messageId, payload, created_at AS createdAt FROM events
     WHERE organization_id = $organizationId AND id > $afterId AND id < $below AND ($upTo IS NULL OR id <= $upTo)
       AND ($types IS NULL OR type IN (SELECT value FROM json_each($types))) AND ($inboxId IS NULL OR inbox_id = $inboxId)
     ORDER BY id LIMIT $limit`,
  );
  const newest = sqlite.query<{ id: string }, [string, string, string | null]>("SELECT id FROM events WHERE organization_id = ?1 AND id < ?2 AND (?3 IS NULL OR id <= ?3) ORDER BY id DESC LIMIT 1");
  // The pending check uses webhook_deliveries_event; deleting an event deletes its finished deliveries and their attempts (ON DELETE CASCADE).
  const purgeBatch = sqlite.query<never, [number, number]>(
    `DELETE FROM events WHERE id IN (
       SELECT e.id FROM events e WHERE e.created_at < ?1
         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.status = 'pending')
       LIMIT ?2)`,
  );
  const wholePayload = payloadReader(sqlite, blobs);
  const newestId = (organizationId: string) => newest.get(organizationId, testEventIdPrefix, visibleUpTo())?.id ?? null;
  // The newest id ever given, from the database at start: a clock set back across a restart made
  // ids below those clients already held, which resuming after them never read.
  let newestGiven = sqlite.query<{ id: string | null }, [string]>("SELECT max(id) AS id FROM events WHERE id < ?1").get(testEventIdPrefix)?.id ?? undefined;

  return {
    holdOrder(): void {},
    emit(event: NewEvent, now: number): string {
      const id = (newestGiven = eventIdAfter(newestGiven));
      insertEvent.run({ id, organizationId: event.organizationId, type: event.type, inboxId: event.inboxId ?? null, messageId: event.messageId ?? null, payload: storedPayload(event.payload, event.messageId), createdAt: now });
      // One delivery per subscribed webhook, due at once. An INSERT … SELECT over json_each in
      // SQL cost three times as much per event, even for an organization without webhooks.
      for (const webhook of subscriptions.of(event.organizationId)) {
        if (webhook.events.has(event.type)) queueDelivery.run(webhook.id, id, now);
      }
      recorded(id);
      return id;
    },
    readAfter(organizationId: string, read: EventRead): EventPage {
      const rows = eventsAfter.all({
        organizationId,
        afterId: read.afterId ?? "",
        below: testEventIdPrefix,
        upTo: visibleUpTo(),
        types: read.types ? JSON.stringify(read.types) : null,
        inboxId: read.inboxId ?? null,
        limit: read.limit,
      });
      // Stored payloads are small (attachments' contents are elsewhere): made whole one by one, up to the budget.
      const events: EventRecord[] = [];
      let chars = 0;
      for (const row of rows) {
        if (events.length > 0 && chars >= read.maxChars) break;
        row.payload = wholePayload(row.payload);
        chars += row.payload.length;
        events.push(row);
      }
      const more = events.length < rows.length || rows.length === read.limit;
      if (more) return { events, nextAfterId: events.at(-1)!.id, more };
      // All that matched is read: the next read starts past the newest event, filtered out or not (read in this same turn, so none is skipped).
      const latest = newestId(organizationId);
      const nextAfterId = latest !== null && (read.afterId === null || latest > read.afterId) ? latest : read.afterId;
      return { events, nextAfterId, more };
    },
    newestId,
    purge(before: number, limit: number): number {
      return purgeBatch.run(before, limit).changes;
    },
  };
};
