/**
 * The outbound queue's side of deliveries (one row per remote recipient of a sent message) and
 * the status of the messages they belong to, as ../sqlite/deliveries.ts, for several nodes at
 * once: due rows are claimed with FOR UPDATE SKIP LOCKED and held by a lease (./leases.ts), and
 * a row another node holds is not due.
 */
import { and, asc, desc, eq, sql } from "drizzle-orm";
import type { AttachmentRecord, DeliveryRecord, MessageRecord, OutboundDeliveryRecord } from "../records";
import type { DeliveriesStore, DeliveryFilter, DeliveryStatus, DeliveryUpdate, OutboundMessage, QueueBacklog, QueuedDelivery, SendableMessage } from "../store";
import { withContent, type PgBlobs } from "./blobs";
import { firstRow, rowsOf, type PgDb } from "./db";
import { textsOf } from "./lists";
import { unheld, type Leases } from "./leases";
import { attachments, deliveries, messages } from "./schema/index";

/** The record's columns: everything but the lease (claimed_by, lease_until). */
const deliveryColumns = {
  id: deliveries.id,
  organizationId: deliveries.organizationId,
  messageId: deliveries.messageId,
  recipient: deliveries.recipient,
  domain: deliveries.domain,
  status: deliveries.status,
  attempts: deliveries.attempts,
  lastResponse: deliveries.lastResponse,
  nextAttemptAt: deliveries.nextAttemptAt,
  createdAt: deliveries.createdAt,
  updatedAt: deliveries.updatedAt,
};

const queuedColumns = sql`id, organization_id AS "organizationId", message_id AS "messageId", recipient, domain, attempts, next_attempt_at::float8 AS "dueAt",
  CASE WHEN status = 'delivered' THEN last_response END AS "acceptedReply"`;

export function deliveriesStore(db: PgDb, blobs: PgBlobs, leases: Leases): DeliveriesStore {
  const whole = withContent(blobs);
  return {
    /** Newest first; ids (time-ordered) break ties within one millisecond. */
    async list(organizationId: string, filter: DeliveryFilter, page: number, per: number, extra = 0): Promise<OutboundDeliveryRecord[]> {
      return db
        .select({ ...deliveryColumns, inboxId: messages.inboxId, threadId: messages.threadId, subject: messages.subject, from: messages.from, fromName: messages.fromName })
        .from(deliveries)
        .innerJoin(messages, eq(messages.id, deliveries.messageId))
        .where(
          and(
            eq(deliveries.organizationId, organizationId),
            filter.status === undefined ? undefined : eq(deliveries.status, filter.status),
            filter.domain === undefined ? undefined : eq(deliveries.domain, filter.domain),
            filter.inboxId === undefined ? undefined : eq(messages.inboxId, filter.inboxId),
          ),
        )
        .orderBy(desc(deliveries.createdAt), desc(deliveries.id))
        .limit(per + extra)
        .offset((page - 1) * per);
    },
    async backlog(): Promise<QueueBacklog> {
      const row = await firstRow<QueueBacklog>(db, sql`SELECT count(*)::int AS depth, min(created_at)::float8 AS "oldestCreatedAt" FROM deliveries WHERE next_attempt_at IS NOT NULL`);
      return row!;
    },
    async nextDueAfter(after: number): Promise<number | undefined> {
      const row = await firstRow<{ dueAt: number | null }>(db, sql`SELECT min(next_attempt_at)::float8 AS "dueAt" FROM deliveries WHERE next_attempt_at > ${after}`);
      return row?.dueAt ?? undefined;
    },
    async dueDomains(now: number, skipDomains: string[], skipOrganizations: string[], skipIds: string[], limit: number): Promise<string[]> {
      const rows = await rowsOf<{ domain: string }>(db, sql`
        SELECT domain FROM deliveries
        WHERE next_attempt_at IS NOT NULL AND next_attempt_at <= ${now} AND ${unheld(now)}
          AND domain NOT IN ${textsOf(skipDomains)}
          AND organization_id NOT IN ${textsOf(skipOrganizations)}
          AND id NOT IN ${textsOf(skipIds)}
        GROUP BY domain ORDER BY min(next_attempt_at) LIMIT ${limit}`);
      return rows.map((row) => row.domain);
    },
    /**
     * Each row is locked as it is read (FOR UPDATE SKIP LOCKED): rows another node is claiming
     * in its own transaction are passed over, and the caller's claim (recordAttempt) commits with
     * the lock held, so that no two nodes claim one delivery.
     */
    async dueGroups(domain: string, now: number, skip: ReadonlySet<string>, limit: number): Promise<QueuedDelivery[][]> {
      const skipped = textsOf([...skip]);
      const due = await rowsOf<QueuedDelivery>(db, sql`
        SELECT ${queuedColumns} FROM deliveries
        WHERE message_id IN (
          SELECT message_id FROM deliveries
          WHERE domain = ${domain} AND next_attempt_at IS NOT NULL AND next_attempt_at <= ${now} AND ${unheld(now)}
            AND id NOT IN ${skipped}
          GROUP BY message_id ORDER BY min(next_attempt_at), min(created_at) LIMIT ${limit})
        AND domain = ${domain} AND next_attempt_at IS NOT NULL AND next_attempt_at <= ${now} AND ${unheld(now)}
        AND id NOT IN ${skipped}
        ORDER BY next_attempt_at, created_at, id
        FOR UPDATE SKIP LOCKED`);
      // One group per message, the longest-waiting message first; within a group, in id order (the order they were made).
      const groups = new Map<string, QueuedDelivery[]>();
      for (const row of due) {
        const group = groups.get(row.messageId);
        if (group) group.push(row);
        else groups.set(row.messageId, [row]);
      }
      return [...groups.values()].map((group) => group.sort((a, b) => (a.id < b.id ? -1 : 1)));
    },
    /** And leases the delivery to this node until its outcome is recorded (./leases.ts). */
    async recordAttempt(id: string, retryAt: number, now: number): Promise<void> {
      await db.execute(sql`
        UPDATE deliveries SET attempts = attempts + (status = 'queued')::int, next_attempt_at = ${retryAt}, claimed_by = ${leases.holder}, lease_until = ${leases.until()}, updated_at = ${now}
        WHERE id = ${id}`);
    },
    /** An accepted delivery (claimed to be recorded, never tried) is due again as before too: the lease is given up. */
    async releaseAttempt(id: string, dueAt: number, now: number): Promise<void> {
      await db.execute(sql`
        UPDATE deliveries SET attempts = attempts - (status = 'queued')::int, next_attempt_at = ${dueAt}, claimed_by = NULL, lease_until = NULL, updated_at = ${now}
        WHERE id = ${id} AND claimed_by = ${leases.holder}`);
    },
    async update(change: DeliveryUpdate): Promise<void> {
      await db.execute(sql`
        UPDATE deliveries SET status = ${change.status}, last_response = ${change.lastResponse}, next_attempt_at = ${change.nextAttemptAt}, claimed_by = NULL, lease_until = NULL, updated_at = ${change.now},
          attempts = COALESCE(${change.attempts ?? null}::integer, attempts)
        WHERE id = ${change.id}`);
    },
    /**
     * Due now, as on SQLite, yet held by this node's lease: it records the rest (finishAccepted),
     * and should it die first, the node that takes it over records it without sending it again
     * (acceptedReply).
     */
    async markAccepted(id: string, lastResponse: string, now: number): Promise<void> {
      await db.execute(sql`UPDATE deliveries SET status = 'delivered', last_response = ${lastResponse}, next_attempt_at = ${now}, updated_at = ${now} WHERE id = ${id} AND status = 'queued'`);
    },
    async finishAccepted(id: string, now: number): Promise<void> {
      await db.execute(sql`UPDATE deliveries SET next_attempt_at = NULL, claimed_by = NULL, lease_until = NULL, updated_at = ${now} WHERE id = ${id} AND status = 'delivered'`);
    },
    /** This run's claim, whatever the lease's time: one that lapsed and that no node took over is still this node's to send. */
    async stillClaimed(ids: string[]): Promise<boolean> {
      const rows = await rowsOf<{ found: number }>(db, sql`SELECT 1 AS found FROM deliveries WHERE id IN ${textsOf(ids)} AND claimed_by = ${leases.holder} LIMIT 1`);
      return rows.length > 0;
    },
    async find(id: string): Promise<DeliveryRecord | undefined> {
      const [row] = await db.select(deliveryColumns).from(deliveries).where(eq(deliveries.id, id));
      return row;
    },
    async statusesOf(messageId: string): Promise<DeliveryStatus[]> {
      const rows = await db.select({ status: deliveries.status }).from(deliveries).where(eq(deliveries.messageId, messageId));
      return rows.map((row) => row.status as DeliveryStatus);
    },
    async message(messageId: string): Promise<OutboundMessage | undefined> {
      const [row] = await db
        .select({ id: messages.id, organizationId: messages.organizationId, inboxId: messages.inboxId, from: messages.from, status: messages.status })
        .from(messages)
        .where(eq(messages.id, messageId));
      return row;
    },
    async setMessageStatus(messageId: string, status: string, now: number): Promise<void> {
      await db.update(messages).set({ status, updatedAt: now }).where(eq(messages.id, messageId));
    },
    async sendable(messageId: string): Promise<SendableMessage | undefined> {
      const found = await firstRow<Omit<SendableMessage, "raw"> & { content: Buffer; blobId: string | null }>(db, sql`
        SELECT m.id, m.organization_id AS "organizationId", m.inbox_id AS "inboxId", m.from_address AS "from", m.status, s.raw AS content, s.blob_id AS "blobId"
        FROM messages m JOIN message_sources s ON s.message_id = m.id WHERE m.id = ${messageId}`);
      if (!found) return undefined;
      const { content, blobId: _blobId, ...message } = await whole(found);
      return { ...message, raw: content };
    },
    async messageWithParts(messageId: string): Promise<{ message: MessageRecord; attachments: AttachmentRecord[]; deliveries: DeliveryRecord[] } | undefined> {
      const [message] = await db.select().from(messages).where(eq(messages.id, messageId));
      if (!message) return undefined;
      const parts = await db.select().from(attachments).where(eq(attachments.messageId, messageId)).orderBy(asc(attachments.position));
      // Ids made together sort in the order they were made (ids.ts).
      const ofMessage = await db.select(deliveryColumns).from(deliveries).where(eq(deliveries.messageId, messageId)).orderBy(asc(deliveries.createdAt), asc(deliveries.id));
      return { message, attachments: await Promise.all(parts.map(whole)), deliveries: ofMessage };
    },
  };
}
