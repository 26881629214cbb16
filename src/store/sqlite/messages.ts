/**
 * Messages with their raw source, attachments and outbound delivery records. Reads take the
 * inbox (and the organization where an id comes from a client), so one tenant never sees another's.
 */
import { and, asc, eq, getTableColumns, inArray, sql } from "drizzle-orm";
import { attachments, deliveries, messages, messageSources } from "./schema/index";
import type { ListedAttachmentRecord } from "../records";
import type { StoredBytes } from "../store";
import { withContent, type BlobStore } from "./blobs";
import type { Db } from "./db";
import { placeholdersOf } from "../placeholders";
import { RESEND_LOOKUP_COPIES } from "../resend-lookup";

export type MessageRow = typeof messages.$inferSelect;
export type AttachmentRow = typeof attachments.$inferSelect;
export type DeliveryRow = typeof deliveries.$inferSelect;

/** The columns the message list shows (the description's subset). */
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
export type MessageSummaryRow = Pick<MessageRow, keyof typeof summaryColumns>;

/** A summary row as SQLite returns it: `to` and `labels` still JSON text, `read` 0 or 1. */
type StoredSummaryRow = Omit<MessageSummaryRow, "to" | "labels" | "read"> & { to: string; labels: string; read: number };

const decodedSummary = (row: StoredSummaryRow): MessageSummaryRow => ({ ...row, to: JSON.parse(row.to) as string[], labels: JSON.parse(row.labels) as string[], read: row.read === 1 });

/** `column AS "key"` for every summary column: rows come out of SQLite already named as the summary. */
const summarySelect = Object.entries(summaryColumns)
  .map(([key, column]) => `messages.${column.name} AS "${key}"`)
  .join(", ");

const EMPTY = Buffer.alloc(0);

/**
 * An attachment without its content: length() of a blob reads its size from the record, not the value; a staged
 * one's is its chunks'. Columns named in full: drizzle writes a column of the select's own table
 * unqualified, which the subquery would read as its own.
 */
const { content: _content, blobId: _blobId, ...attachmentListingColumns } = getTableColumns(attachments);
const listedAttachmentColumns = {
  ...attachmentListingColumns,
  size: sql<number>`CASE WHEN attachments.blob_id IS NULL THEN length(attachments.content) ELSE (SELECT coalesce(sum(length(c.bytes)), 0) FROM blob_chunks c WHERE c.blob_id = attachments.blob_id) END`,
};

export const messagesStore = (db: Db, blobs: BlobStore) => {
  const whole = withContent(blobs);
  // octet_length and length of a blob read a value's size from its record, not the value.
  const contentSizes = db.$client.query<{ id: string; textBytes: number; attachmentBytes: number }, [string]>(
    `SELECT m.id, coalesce(octet_length(m.text), 0) + coalesce(octet_length(m.html), 0) AS textBytes,
       coalesce((SELECT sum(length(a.content)) FROM attachments a WHERE a.message_id = m.id), 0)
       + coalesce((SELECT sum(length(c.bytes)) FROM attachments a JOIN blob_chunks c ON c.blob_id = a.blob_id WHERE a.message_id = m.id), 0) AS attachmentBytes
     FROM messages m WHERE m.thread_id = ?1 ORDER BY m.created_at, m.rowid`,
  );
  // The message list is the API's busiest read. A bun:sqlite statement: drizzle maps every column
  // of every row through generic code, which cost more than the indexed read itself; only the
  // JSON column needs decoding (in `list`).
  // The page's rows are found in the index alone, then read: an OFFSET that read every row it
  // passed over (to check its organization) took 55 ms of the event loop at page 1,000 of an
  // inbox of 200,000 messages, and eight such requests held everyone's for 0.8 s; now 2-3 ms.
  const byInbox = db.$client.query<StoredSummaryRow, { organizationId: string; inboxId: string; limit: number; offset: number }>(
    `SELECT ${summarySelect} FROM messages
     WHERE rowid IN (SELECT rowid FROM messages WHERE inbox_id = $inboxId ORDER BY created_at DESC, rowid DESC LIMIT $limit OFFSET $offset)
       AND organization_id = $organizationId
     ORDER BY created_at DESC, rowid DESC`,
  );
  // The labelled messages straight from message_labels' primary key, newest first (migration 0150).
  const byLabel = db.$client.query<StoredSummaryRow, { organizationId: string; inboxId: string; label: string; limit: number; offset: number }>(
    `SELECT ${summarySelect} FROM (
       SELECT message_id, created_at FROM message_labels WHERE inbox_id = $inboxId AND label = $label
       ORDER BY created_at DESC, message_id DESC LIMIT $limit OFFSET $offset
     ) AS page JOIN messages ON messages.id = page.message_id
     WHERE messages.organization_id = $organizationId
     ORDER BY page.created_at DESC, page.message_id DESC`,
  );
  const threadOfMessageId = db
    .select({ threadId: messages.threadId })
    .from(messages)
    .where(and(eq(messages.inboxId, sql.placeholder("inboxId")), eq(messages.messageIdHeader, sql.placeholder("messageId"))))
    .limit(1)
    .prepare();
  const receivedWithMessageId = db.$client.query<{ id: string }, { inboxId: string; messageId: string; digest: string }>(
    `SELECT id FROM (SELECT id, received_digest, status FROM messages WHERE inbox_id = $inboxId AND message_id_header = $messageId LIMIT ${RESEND_LOOKUP_COPIES})
     WHERE (received_digest = $digest OR received_digest IS NULL) AND status = 'received' LIMIT 1`,
  );
  const insertMessage = db.insert(messages).values(placeholdersOf(messages)).prepare();
  const insertSource = db.insert(messageSources).values(placeholdersOf(messageSources)).prepare();
  const insertAttachment = db.insert(attachments).values(placeholdersOf(attachments)).prepare();
  const insertDelivery = db.insert(deliveries).values(placeholdersOf(deliveries)).prepare();
  const byId = db
    .select()
    .from(messages)
    .where(and(eq(messages.organizationId, sql.placeholder("organizationId")), eq(messages.inboxId, sql.placeholder("inboxId")), eq(messages.id, sql.placeholder("id"))))
    .prepare();

  return {
    /**
     * The message row, its raw RFC 5322 source and its attachments; call inside a transaction.
     * Values prepared as blobs (blobs.prepare, `blobId` set) are claimed here, attachments' rows
     * stored empty (a source keeps its inline head: StoredBytes).
     */
    insert(row: MessageRow, raw: StoredBytes, attachmentRows: AttachmentRow[]) {
      insertMessage.run(row);
      insertSource.run({ messageId: row.id, raw: raw.bytes, blobId: raw.blobId });
      if (raw.blobId) blobs.claim(raw.blobId);
      for (const attachment of attachmentRows) {
        insertAttachment.run(attachment.blobId ? { ...attachment, content: EMPTY } : attachment);
        if (attachment.blobId) blobs.claim(attachment.blobId);
      }
    },
    insertDeliveries(rows: DeliveryRow[]) {
      for (const row of rows) insertDelivery.run(row);
    },
    find(organizationId: string, inboxId: string, id: string): MessageRow | undefined {
      return byId.get({ organizationId, inboxId, id });
    },
    /** Whether the inbox already received this message (MessagesStore.hasReceived). */
    hasReceived(inboxId: string, messageId: string, digest: string): boolean {
      return receivedWithMessageId.get({ inboxId, messageId, digest }) !== null;
    },
    /** The thread of the message with this Message-ID in the inbox, if it holds one. */
    threadOfMessageId(inboxId: string, messageId: string): string | undefined {
      return threadOfMessageId.get({ inboxId, messageId })?.threadId;
    },
    /** Newest first; nothing for another organization's inbox. */
    list(organizationId: string, inboxId: string, page: number, per: number, extra = 0): MessageSummaryRow[] {
      return byInbox.all({ organizationId, inboxId, limit: per + extra, offset: (page - 1) * per }).map(decodedSummary);
    },
    /** As `list`, only the messages with the label. */
    listLabeled(organizationId: string, inboxId: string, label: string, page: number, per: number, extra = 0): MessageSummaryRow[] {
      return byLabel.all({ organizationId, inboxId, label, limit: per + extra, offset: (page - 1) * per }).map(decodedSummary);
    },
    /** The labels' trigger (migration 0150) brings message_labels in step. */
    setLabels(organizationId: string, inboxId: string, id: string, labels: string[], now: number): MessageRow | undefined {
      return db
        .update(messages)
        .set({ labels, updatedAt: now })
        .where(and(eq(messages.organizationId, organizationId), eq(messages.inboxId, inboxId), eq(messages.id, id)))
        .returning()
        .get();
    },
    setRead(organizationId: string, inboxId: string, id: string, read: boolean, now: number): MessageRow | undefined {
      return db
        .update(messages)
        .set({ read, updatedAt: now })
        .where(and(eq(messages.organizationId, organizationId), eq(messages.inboxId, inboxId), eq(messages.id, id)))
        .returning()
        .get();
    },
    /** Oldest first. */
    listByThread(threadId: string): MessageRow[] {
      return db.select().from(messages).where(eq(messages.threadId, threadId)).orderBy(asc(messages.createdAt), asc(sql`messages.rowid`)).all();
    },
    contentSizesInThread(threadId: string): { id: string; textBytes: number; attachmentBytes: number }[] {
      return contentSizes.all(threadId);
    },
    attachmentsOf(messageIds: string[]): AttachmentRow[] {
      if (messageIds.length === 0) return [];
      return db.select().from(attachments).where(inArray(attachments.messageId, messageIds)).orderBy(asc(attachments.messageId), asc(attachments.position)).all().map(whole);
    },
    attachmentListingsOf(messageIds: string[]): ListedAttachmentRecord[] {
      if (messageIds.length === 0) return [];
      return db.select(listedAttachmentColumns).from(attachments).where(inArray(attachments.messageId, messageIds)).orderBy(asc(attachments.messageId), asc(attachments.position)).all();
    },
    attachment(messageId: string, attachmentId: string): AttachmentRow | undefined {
      const row = db.select().from(attachments).where(and(eq(attachments.messageId, messageId), eq(attachments.id, attachmentId))).get();
      return row && whole(row);
    },
    deliveriesOf(messageIds: string[]): DeliveryRow[] {
      if (messageIds.length === 0) return [];
      return db.select().from(deliveries).where(inArray(deliveries.messageId, messageIds)).orderBy(asc(deliveries.createdAt), asc(sql`deliveries.rowid`)).all();
    },
    /** The RFC 5322 bytes as stored (sent: as composed; received: as accepted). */
    rawSource(messageId: string): Buffer | undefined {
      const source = db.select({ content: messageSources.raw, blobId: messageSources.blobId }).from(messageSources).where(eq(messageSources.messageId, messageId)).get();
      return source && whole(source).content;
    },
  };
};

