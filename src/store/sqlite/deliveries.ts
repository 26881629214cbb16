/**
 * The outbound queue's side of deliveries (one row per remote recipient of a sent message) and
 * the status of the messages they belong to. Prepared statements rather than the query builder:
 * the worker runs them for every message it sends, several per transaction (outbound/queue.ts).
 */
import { attachments, deliveries, messages } from "./schema/index";
import type { AttachmentRow, DeliveryRow, MessageRow } from "./messages";
import { withContent, type BlobStore } from "./blobs";
import type { Db } from "./db";
import { rowReader } from "./row-reader";
import type { DeliveryFilter, DeliveryStatus, DeliveryUpdate, OutboundMessage, QueueBacklog, QueuedDelivery, SendableMessage } from "../store";
import type { OutboundDeliveryRecord } from "../records";

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : 1);

export const deliveriesStore = (db: Db, blobs: BlobStore) => {
  const whole = withContent(blobs);
  const sqlite = db.$client;
  // Deliveries in flight are skipped: should a try outlast its lease, it is not claimed twice.
  const dueDomains = sqlite.query<{ domain: string }, [number, string, string, string, number]>(`
    SELECT domain FROM deliveries
    WHERE next_attempt_at IS NOT NULL AND next_attempt_at <= ?1
      AND domain NOT IN (SELECT value FROM json_each(?2))
      AND organization_id NOT IN (SELECT value FROM json_each(?3))
      AND id NOT IN (SELECT value FROM json_each(?4))
    GROUP BY domain ORDER BY min(next_attempt_at) LIMIT ?5`);
  // Newest first from migration 0201's index; a filter left out (null) matches every row.
  const organizationList = sqlite.query<OutboundDeliveryRecord, { organizationId: string; status: string | null; domain: string | null; inboxId: string | null; limit: number; offset: number }>(`
    SELECT deliveries.id, deliveries.organization_id AS organizationId, deliveries.message_id AS messageId, recipient, domain, deliveries.status, attempts,
           last_response AS lastResponse, next_attempt_at AS nextAttemptAt, deliveries.created_at AS createdAt, deliveries.updated_at AS updatedAt,
           messages.inbox_id AS inboxId, messages.thread_id AS threadId, messages.subject, messages.from_address AS "from", messages.from_name AS fromName
    FROM deliveries INDEXED BY deliveries_organization_created JOIN messages ON messages.id = deliveries.message_id
    WHERE deliveries.organization_id = $organizationId
      AND ($status IS NULL OR deliveries.status = $status)
      AND ($domain IS NULL OR deliveries.domain = $domain)
      AND ($inboxId IS NULL OR messages.inbox_id = $inboxId)
    ORDER BY deliveries.created_at DESC, deliveries.rowid DESC LIMIT $limit OFFSET $offset`);
  const backlog = sqlite.query<QueueBacklog, []>("SELECT count(*) AS depth, min(created_at) AS oldestCreatedAt FROM deliveries WHERE next_attempt_at IS NOT NULL");
  const nextDueAfter = sqlite.query<{ dueAt: number | null }, [number]>("SELECT min(next_attempt_at) AS dueAt FROM deliveries WHERE next_attempt_at > ?1");
  const dueMessages = sqlite.query<{ id: string; messageId: string }, [string, number, number]>(`
    SELECT id, message_id AS messageId FROM deliveries
    WHERE domain = ?1 AND next_attempt_at IS NOT NULL AND next_attempt_at <= ?2
    ORDER BY next_attempt_at, created_at LIMIT ?3`);
  const dueOfMessage = sqlite.query<QueuedDelivery, [string, string, number]>(`
    SELECT id, organization_id AS organizationId, message_id AS messageId, recipient, domain, attempts, next_attempt_at AS dueAt,
           CASE WHEN status = 'delivered' THEN last_response END AS acceptedReply
    FROM deliveries INDEXED BY deliveries_message -- not the domain's index: that would visit every due row of the domain
    WHERE message_id = ?1 AND domain = ?2 AND next_attempt_at IS NOT NULL AND next_attempt_at <= ?3`);
  // An accepted delivery that comes due is only recorded (acceptedReply): no try to count.
  const recordAttempt = sqlite.query<never, [string, number, number]>(
    "UPDATE deliveries SET attempts = attempts + (status = 'queued'), next_attempt_at = ?2, updated_at = ?3 WHERE id = ?1",
  );
  const releaseAttempt = sqlite.query<never, [string, number, number]>(
    "UPDATE deliveries SET attempts = attempts - 1, next_attempt_at = ?2, updated_at = ?3 WHERE id = ?1 AND status = 'queued'",
  );
  const update = sqlite.query<never, [string, string, string, number | null, number, number | null]>(
    "UPDATE deliveries SET status = ?2, last_response = ?3, next_attempt_at = ?4, updated_at = ?5, attempts = COALESCE(?6, attempts) WHERE id = ?1",
  );
  const markAccepted = sqlite.query<never, [string, string, number]>(
    "UPDATE deliveries SET status = 'delivered', last_response = ?2, next_attempt_at = ?3, updated_at = ?3 WHERE id = ?1 AND status = 'queued'",
  );
  const finishAccepted = sqlite.query<never, [string, number]>("UPDATE deliveries SET next_attempt_at = NULL, updated_at = ?2 WHERE id = ?1 AND status = 'delivered'");
  const anyOf = sqlite.query<{ found: 1 }, [string]>("SELECT 1 AS found FROM deliveries WHERE id IN (SELECT value FROM json_each(?1)) LIMIT 1");
  const find = sqlite.query<DeliveryRow, [string]>(`
    SELECT id, organization_id AS organizationId, message_id AS messageId, recipient, domain, status, attempts,
           last_response AS lastResponse, next_attempt_at AS nextAttemptAt, created_at AS createdAt, updated_at AS updatedAt
    FROM deliveries WHERE id = ?1`);
  const statusesOf = sqlite.query<{ status: DeliveryStatus }, [string]>("SELECT status FROM deliveries WHERE message_id = ?1");
  const message = sqlite.query<OutboundMessage, [string]>(
    "SELECT id, organization_id AS organizationId, inbox_id AS inboxId, from_address AS \"from\", status FROM messages WHERE id = ?1",
  );
  const setMessageStatus = sqlite.query<never, [string, string, number]>("UPDATE messages SET status = ?2, updated_at = ?3 WHERE id = ?1");
  const sendable = sqlite.query<Omit<SendableMessage, "raw"> & { content: Buffer; blobId: string | null }, [string]>(`
    SELECT m.id, m.organization_id AS organizationId, m.inbox_id AS inboxId, m.from_address AS "from", m.status, s.raw AS content, s.blob_id AS blobId
    FROM messages m JOIN message_sources s ON s.message_id = m.id WHERE m.id = ?1`);
  // The whole message as events show it, prepared: the queue presents one for every status change.
  const messageRow = rowReader<typeof messages, [string]>(sqlite, messages, "id = ?1");
  const attachmentsOfMessage = rowReader<typeof attachments, [string]>(sqlite, attachments, "message_id = ?1", (a, b) => a.position - b.position);
  // Ids made together sort in the order they were made (ids.ts).
  const deliveriesOfMessage = rowReader<typeof deliveries, [string]>(sqlite, deliveries, "message_id = ?1", (a, b) => a.createdAt - b.createdAt || byId(a, b));

  return {
    list(organizationId: string, filter: DeliveryFilter, page: number, per: number, extra = 0): OutboundDeliveryRecord[] {
      return organizationList.all({
        organizationId,
        status: filter.status ?? null,
        domain: filter.domain ?? null,
        inboxId: filter.inboxId ?? null,
        limit: per + extra,
        offset: (page - 1) * per,
      });
    },
    /** Destination domains with deliveries due, the longest-waiting first. */
    /** Deliveries still to be tried, and when the oldest of them was queued (the metrics' queue depth and age). */
    backlog: (): QueueBacklog => backlog.get()!,
    nextDueAfter: (after: number): number | undefined => nextDueAfter.get(after)!.dueAt ?? undefined,
    dueDomains(now: number, skipDomains: string[], skipOrganizations: string[], skipIds: string[], limit: number): string[] {
      return dueDomains.all(now, JSON.stringify(skipDomains), JSON.stringify(skipOrganizations), JSON.stringify(skipIds), limit).map((row) => row.domain);
    },
    /**
     * The due deliveries of up to `limit` messages to `domain`, the longest-waiting first, one group
     * per message: what one SMTP transaction carries. Deliveries in `skip` (in flight) are left out.
     */
    dueGroups(domain: string, now: number, skip: ReadonlySet<string>, limit: number): QueuedDelivery[][] {
      // A message with several recipients there has several rows: read more rows than messages wanted.
      const rows = dueMessages.all(domain, now, limit * 4 + skip.size).filter((row) => !skip.has(row.id));
      const messageIds = [...new Set(rows.map((row) => row.messageId))].slice(0, limit);
      // In id order (the order they were made), sorted here rather than by an ORDER BY (see row-reader.ts).
      const group = (messageId: string) => dueOfMessage.all(messageId, domain, now).filter((row) => !skip.has(row.id)).sort(byId);
      return messageIds.map(group).filter((rows) => rows.length > 0);
    },
    /** Counts a try before it is made; `retryAt` is when it is made again should its outcome never be recorded. */
    recordAttempt(id: string, retryAt: number, now: number) {
      recordAttempt.run(id, retryAt, now);
    },
    /** Undoes recordAttempt for a try that was never made (claimed, then the queue stopped). */
    releaseAttempt(id: string, dueAt: number, now: number) {
      releaseAttempt.run(id, dueAt, now);
    },
    update(change: DeliveryUpdate) {
      update.run(change.id, change.status, change.lastResponse, change.nextAttemptAt, change.now, change.attempts ?? null);
    },
    /**
     * A remote server accepted the delivery: it is `delivered`, and due now until finishAccepted,
     * so that after a crash in between the restarted queue records the rest at once (the running
     * queue skips it, being in flight). Only a queued delivery moves: a second call is a no-op,
     * and a bounce report that came in between stands.
     */
    markAccepted(id: string, lastResponse: string, now: number) {
      markAccepted.run(id, lastResponse, now);
    },
    /** The rest of the accepting try is recorded: the delivery is no longer due. */
    finishAccepted(id: string, now: number) {
      finishAccepted.run(id, now);
    },
    find(id: string): DeliveryRow | undefined {
      return find.get(id) ?? undefined;
    },
    /** One process per data dir: a claimed delivery stays this process's while it exists. */
    stillClaimed(ids: string[]): boolean {
      return anyOf.get(JSON.stringify(ids)) !== null;
    },
    statusesOf(messageId: string): DeliveryStatus[] {
      return statusesOf.all(messageId).map((row) => row.status);
    },
    message(messageId: string): OutboundMessage | undefined {
      return message.get(messageId) ?? undefined;
    },
    setMessageStatus(messageId: string, status: string, now: number) {
      setMessageStatus.run(messageId, status, now);
    },
    /** The message and its raw source, when it still exists. */
    sendable(messageId: string): SendableMessage | undefined {
      const found = sendable.get(messageId);
      if (!found) return undefined;
      const { content, blobId, ...message } = whole(found);
      return { ...message, raw: content };
    },
    /** The message row with its attachments and deliveries, for presenting it. */
    messageWithParts(messageId: string): { message: MessageRow; attachments: AttachmentRow[]; deliveries: DeliveryRow[] } | undefined {
      const message = messageRow.get(messageId);
      if (!message) return undefined;
      return { message, attachments: attachmentsOfMessage.all(messageId).map(whole), deliveries: deliveriesOfMessage.all(messageId) };
    },
  };
};
