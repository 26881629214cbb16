/**
 * Messages with their raw source, attachments and outbound delivery records (../sqlite/messages.ts).
 * Reads take the inbox (and the organization where an id comes from a client), so one tenant never
 * sees another's. The (time-ordered) id breaks ties of equal times where SQLite's rowid does.
 */
import { and, asc, desc, eq, getTableColumns, inArray, isNull, or, sql } from "drizzle-orm";
import { placeholdersOf } from "../placeholders";
import { RESEND_LOOKUP_COPIES } from "../resend-lookup";
import type { MessagesStore } from "../store";
import { withContent, type PgBlobs } from "./blobs";
import { renderedOnce, rowsOf, type PgDb } from "./db";
import { attachments, deliveries, messageLabels, messages, messageSources } from "./schema/index";

/** The columns the message list shows (MessageSummaryRecord). */
export const summaryColumns = {
  id: messages.id,
  organizationId: messages.organizationId,
  inboxId: messages.inboxId,
  threadId: messages.threadId,
  from: messages.from,
  fromName: messages.fromName,
  to: messages.to,
  subject: messages.subject,
  text: messages.text,
  html: messages.html,
  labels: messages.labels,
  read: messages.read,
  status: messages.status,
  createdAt: messages.createdAt,
};

/** A delivery as the record has it: without the queue's claim (./deliveries.ts). */
const { claimedBy: _claimedBy, ...deliveryColumns } = getTableColumns(deliveries);

const EMPTY = Buffer.alloc(0);

/**
 * An attachment without its content: octet_length reads a value's size, not the value (nor its TOAST chunks); a staged
 * one's is its chunks'. Columns named in full: drizzle writes a column of the select's own table
 * unqualified, which the subquery would read as its own.
 */
const { content: _content, blobId: _blobId, ...attachmentListingColumns } = getTableColumns(attachments);
const listedAttachmentColumns = {
  ...attachmentListingColumns,
  size: sql<number>`CASE WHEN attachments.blob_id IS NULL THEN octet_length(attachments.content) ELSE (SELECT coalesce(sum(octet_length(c.bytes)), 0) FROM blob_chunks c WHERE c.blob_id = attachments.blob_id) END::int`.mapWith(Number),
};

/** Each received message runs these (./db.ts: renderedOnce). */
const insertMessage = renderedOnce((db) => db.insert(messages).values(placeholdersOf(messages)));
const insertSource = renderedOnce((db) => db.insert(messageSources).values(placeholdersOf(messageSources)));

/**
 * `inTransaction`: find locks the row until the commit, as the embedded engine's single writer
 * holds it (twenty label changes at once kept one).
 */
export function messagesStore(db: PgDb, blobs: PgBlobs, inTransaction: boolean): MessagesStore {
  const whole = withContent(blobs);
  const inInbox = (organizationId: string, inboxId: string, id: string) => and(eq(messages.organizationId, organizationId), eq(messages.inboxId, inboxId), eq(messages.id, id));
  return {
    /** Values prepared as blobs (`blobId` set) are claimed here, attachments' rows stored empty (a source keeps its inline head: StoredBytes). */
    async insert(row, raw, attachmentRows) {
      await insertMessage(db, row);
      await insertSource(db, { messageId: row.id, raw: Buffer.from(raw.bytes.buffer, raw.bytes.byteOffset, raw.bytes.byteLength), blobId: raw.blobId });
      if (raw.blobId) await blobs.claim(raw.blobId);
      if (attachmentRows.length) await db.insert(attachments).values(attachmentRows.map((attachment) => (attachment.blobId ? { ...attachment, content: EMPTY } : attachment)));
      for (const attachment of attachmentRows) if (attachment.blobId) await blobs.claim(attachment.blobId);
    },
    async insertDeliveries(rows) {
      if (rows.length) await db.insert(deliveries).values(rows);
    },
    async find(organizationId, inboxId, id) {
      const query = db.select().from(messages).where(inInbox(organizationId, inboxId, id));
      const [row] = inTransaction ? await query.for("no key update") : await query;
      return row;
    },
    async hasReceived(inboxId, messageId, digest) {
      const copies = db
        .select({ id: messages.id, receivedDigest: messages.receivedDigest, status: messages.status })
        .from(messages)
        .where(and(eq(messages.inboxId, inboxId), eq(messages.messageIdHeader, messageId)))
        .limit(RESEND_LOOKUP_COPIES)
        .as("copies");
      const found = await db
        .select({ id: copies.id })
        .from(copies)
        .where(and(or(eq(copies.receivedDigest, digest), isNull(copies.receivedDigest)), eq(copies.status, "received")))
        .limit(1);
      return found.length > 0;
    },
    async threadOfMessageId(inboxId, messageId) {
      const [row] = await db
        .select({ threadId: messages.threadId })
        .from(messages)
        .where(and(eq(messages.inboxId, inboxId), eq(messages.messageIdHeader, messageId)))
        .limit(1);
      return row?.threadId;
    },
    async list(organizationId, inboxId, page, per, extra = 0) {
      return db
        .select(summaryColumns)
        .from(messages)
        .where(and(eq(messages.inboxId, inboxId), eq(messages.organizationId, organizationId)))
        .orderBy(desc(messages.createdAt), desc(messages.id))
        .limit(per + extra)
        .offset((page - 1) * per);
    },
    /** The labelled messages straight from message_labels' primary key, newest first. */
    async listLabeled(organizationId, inboxId, label, page, per, extra = 0) {
      return db
        .select(summaryColumns)
        .from(messageLabels)
        .innerJoin(messages, eq(messages.id, messageLabels.messageId))
        .where(and(eq(messageLabels.inboxId, inboxId), eq(messageLabels.label, label), eq(messages.organizationId, organizationId)))
        .orderBy(desc(messageLabels.createdAt), desc(messageLabels.messageId))
        .limit(per + extra)
        .offset((page - 1) * per);
    },
    /** The labels' trigger (migrations/postgres/0001_mail.sql) brings message_labels in step. */
    async setLabels(organizationId, inboxId, id, labels, now) {
      const [row] = await db.update(messages).set({ labels, updatedAt: now }).where(inInbox(organizationId, inboxId, id)).returning();
      return row;
    },
    async setRead(organizationId, inboxId, id, read, now) {
      const [row] = await db.update(messages).set({ read, updatedAt: now }).where(inInbox(organizationId, inboxId, id)).returning();
      return row;
    },
    async listByThread(threadId) {
      return db.select().from(messages).where(eq(messages.threadId, threadId)).orderBy(asc(messages.createdAt), asc(messages.id));
    },
    async contentSizesInThread(threadId) {
      // octet_length reads a stored value's size, not the value (nor its TOAST chunks).
      return rowsOf(
        db,
        sql`SELECT m.id, (coalesce(octet_length(m.text), 0) + coalesce(octet_length(m.html), 0))::float8 AS "textBytes",
              (coalesce((SELECT sum(octet_length(a.content)) FROM attachments a WHERE a.message_id = m.id), 0)
              + coalesce((SELECT sum(octet_length(c.bytes)) FROM attachments a JOIN blob_chunks c ON c.blob_id = a.blob_id WHERE a.message_id = m.id), 0))::float8 AS "attachmentBytes"
            FROM messages m WHERE m.thread_id = ${threadId} ORDER BY m.created_at, m.id`,
      );
    },
    async attachmentsOf(messageIds) {
      if (messageIds.length === 0) return [];
      const rows = await db.select().from(attachments).where(inArray(attachments.messageId, messageIds)).orderBy(asc(attachments.messageId), asc(attachments.position));
      return Promise.all(rows.map(whole));
    },
    async attachmentListingsOf(messageIds) {
      if (messageIds.length === 0) return [];
      return db.select(listedAttachmentColumns).from(attachments).where(inArray(attachments.messageId, messageIds)).orderBy(asc(attachments.messageId), asc(attachments.position));
    },
    async attachment(messageId, attachmentId) {
      const [row] = await db.select().from(attachments).where(and(eq(attachments.messageId, messageId), eq(attachments.id, attachmentId)));
      return row && whole(row);
    },
    async deliveriesOf(messageIds) {
      if (messageIds.length === 0) return [];
      return db.select(deliveryColumns).from(deliveries).where(inArray(deliveries.messageId, messageIds)).orderBy(asc(deliveries.createdAt), asc(deliveries.id));
    },
    async rawSource(messageId) {
      const [source] = await db.select({ content: messageSources.raw, blobId: messageSources.blobId }).from(messageSources).where(eq(messageSources.messageId, messageId));
      return source && (await whole(source)).content;
    },
  };
}
