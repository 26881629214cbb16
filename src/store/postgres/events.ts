/**
 * The events table (../sqlite/events.ts): written in the caller's transaction with its webhook
 * deliveries; read by the webhook queue and the event stream in id order, which must be the order
 * they were committed in. With several connections and nodes writing at once, an emit takes a lock
 * of the organization's events until its transaction ends and then an id above the newest one:
 * one organization's events commit one after the other, in id order, whatever the nodes' clocks.
 */
import { sql } from "drizzle-orm";
import { testEventIdPrefix } from "../../events/names";
import { eventIdAfter } from "../event-ids";
import { storedPayload } from "../event-payload";
import type { EventRecord } from "../records";
import type { EventsStore } from "../store";
import { firstRow, listOf, lockKeys, rowsOf, type PgDb } from "./db";
import { payloadReader } from "./event-payload";
import type { AggregateContext } from "./index";

/** The advisory lock of an organization's events (lockKeys hashes it as the emit does). */
export const eventsLockKey = (organizationId: string) => `events:${organizationId}`;

/** `eventRecorded` is told of each event written (the store wakes the webhook queue and streams once it is committed). */
export function eventsStore(db: PgDb, { blobs, eventRecorded, inTransaction }: Pick<AggregateContext, "blobs" | "eventRecorded" | "inTransaction">): EventsStore {
  const newestId = async (organizationId: string) =>
    (await firstRow<{ id: string }>(db, sql`SELECT id FROM events WHERE organization_id = ${organizationId} AND id < ${testEventIdPrefix} ORDER BY id DESC LIMIT 1`))?.id ?? null;

  const wholePayload = payloadReader(db, blobs);

  return {
    async holdOrder(organizationIds) {
      // Taken again by each emit: an advisory lock a transaction holds is granted to it at once.
      await lockKeys(db, inTransaction, [...new Set(organizationIds)].map(eventsLockKey));
    },
    async emit(event, now) {
      // The lock lasts until the caller's transaction commits; outside one, the emit is a transaction of its own.
      const record = async (tx: PgDb) => {
        await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${eventsLockKey(event.organizationId)}, 0))`);
        // After the lock, in a statement of its own: its snapshot holds every event committed before the lock was ours.
        const newest = await firstRow<{ id: string }>(tx, sql`SELECT id FROM events WHERE organization_id = ${event.organizationId} AND id < ${testEventIdPrefix} ORDER BY id DESC LIMIT 1`);
        const id = eventIdAfter(newest?.id);
        // The event and one delivery per enabled webhook of the organization that takes its type, in the webhooks' creation order.
        await tx.execute(
          sql`WITH event AS (
                INSERT INTO events (id, organization_id, type, inbox_id, message_id, payload, created_at)
                VALUES (${id}, ${event.organizationId}, ${event.type}, ${event.inboxId ?? null}, ${event.messageId ?? null}, ${storedPayload(event.payload, event.messageId)}, ${now})
                RETURNING id)
              INSERT INTO webhook_deliveries (webhook_id, event_id, status, attempts, next_attempt_at, created_at, updated_at)
              SELECT webhooks.id, event.id, 'pending', 0, ${now}, ${now}, ${now} FROM webhooks, event
              WHERE webhooks.organization_id = ${event.organizationId} AND webhooks.enabled AND webhooks.events ? ${event.type} ORDER BY webhooks.created_at, webhooks.id`,
        );
        return id;
      };
      const id = inTransaction ? await record(db) : await db.transaction(record);
      eventRecorded();
      return id;
    },
    async readAfter(organizationId, read) {
      const types = read.types ? sql`AND type IN (SELECT ids.id FROM ${listOf(read.types)} AS ids(id, position))` : sql``;
      const inbox = read.inboxId ? sql`AND inbox_id = ${read.inboxId}` : sql``;
      // The page and the newest id in one snapshot: an event committed in between is in neither, and read next time.
      const { rows, pageSize, latest } = await db.transaction(
        async (tx) => {
          // The page's rows past the budget stay in the database, measured in bytes, which octet_length reads from the TOAST
          // header without decompressing: a page of a few large payloads is read once, not once per read. At worst a page
          // holds fewer events than the budget allows; `pageSize` still counts the rows left out, for `more`.
          const rows = await rowsOf<EventRecord & { createdAt: string; pageSize: number }>(
            tx,
            sql`SELECT id, "organizationId", type, "inboxId", "messageId", payload, "createdAt", "pageSize" FROM (
                  SELECT page.*, count(*) OVER () AS "pageSize", row_number() OVER (ORDER BY id) AS position,
                    coalesce(sum(octet_length(payload)) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
                  FROM (
                    SELECT id, organization_id AS "organizationId", type, inbox_id AS "inboxId", message_id AS "messageId", payload, created_at AS "createdAt" FROM events
                    WHERE organization_id = ${organizationId} AND id > ${read.afterId ?? ""} AND id < ${testEventIdPrefix} ${types} ${inbox}
                    ORDER BY id LIMIT ${read.limit}) AS page) AS sized
                WHERE position = 1 OR before < ${read.maxChars}
                ORDER BY id`,
          );
          const newest = await firstRow<{ id: string }>(tx, sql`SELECT id FROM events WHERE organization_id = ${organizationId} AND id < ${testEventIdPrefix} ORDER BY id DESC LIMIT 1`);
          return { rows, pageSize: Number(rows[0]?.pageSize ?? 0), latest: newest?.id ?? null };
        },
        { isolationLevel: "repeatable read", accessMode: "read only" },
      );
      // Stored payloads are small (../event-payload.ts): the page's are made whole at once, each a query or two of
      // its own, then kept up to the budget.
      const payloads = await Promise.all(rows.map((row) => wholePayload(row.payload)));
      const events: EventRecord[] = [];
      let chars = 0;
      for (const [i, { pageSize: _pageSize, ...event }] of rows.entries()) {
        if (events.length > 0 && chars >= read.maxChars) break;
        const payload = payloads[i]!;
        chars += payload.length;
        events.push({ ...event, payload, createdAt: Number(event.createdAt) });
      }
      const more = events.length < pageSize || pageSize === read.limit;
      if (more) return { events, nextAfterId: events.at(-1)!.id, more };
      // All that matched is read: the next read starts past the newest event, filtered out or not.
      const nextAfterId = latest !== null && (read.afterId === null || latest > read.afterId) ? latest : read.afterId;
      return { events, nextAfterId, more };
    },
    newestId,
    /**
     * An event with a delivery still pending stays; its finished deliveries and their attempts go
     * with it (ON DELETE CASCADE). Nodes purging at once share the work (SKIP LOCKED) rather than wait for each other.
     */
    async purge(before, limit) {
      const gone = await rowsOf(
        db,
        sql`DELETE FROM events WHERE id IN (
              SELECT e.id FROM events e WHERE e.created_at < ${before}
                AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.status = 'pending')
              LIMIT ${limit} FOR UPDATE SKIP LOCKED)
            RETURNING id`,
      );
      return gone.length;
    },
  };
}
