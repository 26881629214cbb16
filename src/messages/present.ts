/** Messages and threads as the API and the webhooks show them. */
import { iso } from "../clock";
import { takeTurn } from "../event-loop";
import { lastTryDueAt } from "../outbound/policy";
import { resource } from "../present";
import type { Aggregates } from "../store";
import type { AttachmentRecord, DeliveryRecord, ListedAttachmentRecord, MessageRecord, MessageSummaryRecord } from "../store";
import type { ThreadOverviewRecord, ThreadRecord } from "../store";
import type { Attachment, Delivery } from "./shapes";

export type { Attachment, Delivery };

export const presentAttachment = (row: AttachmentRecord): Attachment => {
  let base64: string | undefined;
  return {
    id: row.id,
    name: row.name ?? undefined,
    contentType: row.contentType ?? undefined,
    size: row.content.byteLength,
    contentId: row.contentId ?? undefined,
    inline: row.inline,
    // Encoded when first read: an API response reads it, an event payload leaves it out (store/event-payload.ts).
    get content() {
      return (base64 ??= row.content.toString("base64"));
    },
  };
};

/**
 * What a response shows of messages that may be large: the bytes of their content (text, HTML,
 * attachments), known before it is read; the whole value; and its JSON text in pieces, each made
 * when asked for, so that a large answer is held a message at a time (src/http/download.ts).
 */
export interface LargeAnswer<T> {
  contentBytes: number;
  whole(): Promise<T>;
  pieces(): AsyncIterable<string>;
}

/**
 * One message, already read: its attachments with their content, or listed without it (which
 * their own route downloads, as the MCP tools read a message).
 */
export function messageAnswer(message: ShownMessage): LargeAnswer<ShownMessage> {
  const attachmentBytes = message.attachments.filter(hasContent).reduce((sum, attachment) => sum + attachment.size, 0);
  return {
    // In UTF-8, as the store counts a thread's (contentSizesInThread): the same message is large in both.
    contentBytes: Buffer.byteLength(message.text ?? "") + Buffer.byteLength(message.html ?? "") + attachmentBytes,
    whole: () => withContentEncoded(message),
    async *pieces() {
      yield JSON.stringify(await withContentEncoded(message));
    },
  };
}

/** An attachment listed without its content (`attachmentContent=false`). */
export type ListedAttachment = Omit<Attachment, "content">;
/** A message as a read shows it: its attachments with their content, or listed without it. */
export type ShownMessage = Omit<Message, "attachments"> & { attachments: (Attachment | ListedAttachment)[] };

const hasContent = (attachment: Attachment | ListedAttachment): attachment is Attachment => "content" in attachment;

export const presentListedAttachment = (row: ListedAttachmentRecord): ListedAttachment => ({
  id: row.id,
  name: row.name ?? undefined,
  contentType: row.contentType ?? undefined,
  size: row.size,
  contentId: row.contentId ?? undefined,
  inline: row.inline,
});

/** Attachments at least this large are base64-encoded in a turn of their own before their message is serialised. */
const ENCODE_IN_TURN_BYTES = 1024 * 1024;

/** A thread's preview, in characters (docs/api.md). */
const PREVIEW_CHARS = 200;

/**
 * The message with its large attachments' base64 made ahead, a turn of the event loop each
 * (takeTurn): encoding 18 MB takes about 20 ms and serialising the response as long again, which
 * in one turn held every other request and SMTP session for both.
 */
export async function withContentEncoded<T extends ShownMessage>(message: T): Promise<T> {
  for (const attachment of message.attachments.filter(hasContent)) {
    if (attachment.size < ENCODE_IN_TURN_BYTES) continue;
    await takeTurn();
    void attachment.content;
  }
  return message;
}

/** `retryDelays`: INBOXD_DELIVERY_RETRY_DELAYS, from which a queued delivery's `expiresAt` follows (left out without it). */
export const presentDelivery = (row: DeliveryRecord, retryDelays?: readonly number[]): Delivery => {
  const expiresAt = row.status === "queued" && retryDelays ? lastTryDueAt(retryDelays, row.attempts, row.nextAttemptAt) : undefined;
  return {
    recipient: row.recipient,
    status: row.status,
    attempts: row.attempts,
    lastResponse: row.lastResponse ?? undefined,
    // Only a queued delivery has a next try: an accepted one is due a moment for the queue's own bookkeeping (DeliveriesStore.markAccepted).
    nextAttemptAt: row.status !== "queued" || row.nextAttemptAt === null ? undefined : iso(row.nextAttemptAt),
    expiresAt: expiresAt === undefined ? undefined : iso(expiresAt),
    updatedAt: iso(row.updatedAt),
  };
};

/** Every field: what get, send, reply, thread get and the message events show. `retryDelays`: as presentDelivery's. */
export const presentMessage = (row: MessageRecord, attachments: AttachmentRecord[], deliveries: DeliveryRecord[], retryDelays?: readonly number[]) =>
  resource({
    id: row.id,
    organizationId: row.organizationId,
    inboxId: row.inboxId,
    threadId: row.threadId,
    fromInboxId: row.fromInboxId,
    toInboxId: row.toInboxId,
    from: row.from,
    // The sender's display name beside its address ("Ada Lovelace" of `Ada Lovelace <ada@…>`), left
    // out when there is none, like every optional field. `to`, `cc` and `bcc` stay bare addresses.
    fromName: row.fromName,
    to: row.to,
    cc: row.cc,
    bcc: row.bcc,
    // Where the author asks replies to go (a reply goes there); left out when the message names none.
    replyTo: row.replyTo.length > 0 ? row.replyTo : undefined,
    subject: row.subject,
    text: row.text,
    html: row.html,
    labels: row.labels,
    read: row.read,
    attachments: attachments.map(presentAttachment),
    externalMessageId: row.externalMessageId,
    status: row.status,
    // In the documented order: PostgreSQL's jsonb keeps keys in an order of its own.
    authentication: row.authentication && { spf: row.authentication.spf, dkim: row.authentication.dkim, dmarc: row.authentication.dmarc, arc: row.authentication.arc },
    deliveries: deliveries.map((delivery) => presentDelivery(delivery, retryDelays)),
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  });

export type Message = ReturnType<typeof presentMessage>;

/** The subset the message list shows (the description's list fields). */
export const presentMessageSummary = (row: MessageSummaryRecord) =>
  resource({
    id: row.id,
    organizationId: row.organizationId,
    inboxId: row.inboxId,
    threadId: row.threadId,
    from: row.from,
    fromName: row.fromName,
    to: row.to,
    subject: row.subject,
    text: row.text,
    html: row.html,
    labels: row.labels,
    read: row.read,
    status: row.status,
    createdAt: iso(row.createdAt),
  });

export type MessageSummary = ReturnType<typeof presentMessageSummary>;

/** Stored messages with their attachments and deliveries, read in two queries whatever their number. */
export async function presentStoredMessages(store: Aggregates, rows: MessageRecord[], retryDelays: readonly number[]): Promise<Message[]> {
  const { attachments, deliveries } = await partsOf(store, rows, store.messages.attachmentsOf);
  return rows.map((row) => presentMessage(row, attachments.get(row.id) ?? [], deliveries.get(row.id) ?? [], retryDelays));
}

/** As presentStoredMessages, or with each attachment listed without its content, whose bytes are then never read. */
export async function presentShownMessages(store: Aggregates, rows: MessageRecord[], retryDelays: readonly number[], attachmentContent: boolean): Promise<ShownMessage[]> {
  if (attachmentContent) return presentStoredMessages(store, rows, retryDelays);
  const { attachments, deliveries } = await partsOf(store, rows, store.messages.attachmentListingsOf);
  // The same key order as a message with content: `attachments` keeps its place in the spread.
  return rows.map((row) => ({ ...presentMessage(row, [], deliveries.get(row.id) ?? [], retryDelays), attachments: (attachments.get(row.id) ?? []).map(presentListedAttachment) }));
}

/** The messages' attachments (read by `readAttachments`) and deliveries, by message id. */
async function partsOf<A extends { messageId: string }>(store: Aggregates, rows: MessageRecord[], readAttachments: (ids: string[]) => Promise<A[]>) {
  const ids = rows.map((row) => row.id);
  return {
    attachments: groupBy(await readAttachments.call(store.messages, ids), (row) => row.messageId),
    deliveries: groupBy(await store.messages.deliveriesOf(ids), (row) => row.messageId),
  };
}

/** A thread with what a mail list shows of it (`overview`: its newest message's sender and text, labels, unread count). */
export const presentThread = (row: ThreadRecord, overview: ThreadOverviewRecord | undefined) =>
  resource({
    id: row.id,
    organizationId: row.organizationId,
    inboxId: row.inboxId,
    subject: row.subject,
    from: overview?.from ?? "",
    fromName: overview?.fromName,
    // One line: the text's line breaks and runs of spaces as single spaces, then its first 200 characters.
    preview: [...(overview?.preview?.replace(/\s+/g, " ").trim() ?? "")].slice(0, PREVIEW_CHARS).join("") || undefined,
    // Each label of its messages once, sorted: the engines aggregate them in orders of their own.
    labels: (overview?.labels ?? []).toSorted(),
    unreadCount: overview?.unreadCount ?? 0,
    attachmentCount: overview?.attachmentCount ?? 0,
    messageCount: row.messageCount,
    lastMessageAt: iso(row.lastMessageAt),
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  });

export type Thread = ReturnType<typeof presentThread>;

/** Threads with their overviews, read in one query whatever their number. */
export async function presentThreads(store: Aggregates, rows: ThreadRecord[]): Promise<Thread[]> {
  const overviews = new Map((await store.threads.overviews(rows.map((row) => row.id))).map((overview) => [overview.threadId, overview]));
  return rows.map((row) => presentThread(row, overviews.get(row.id)));
}

function groupBy<T>(rows: T[], key: (row: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const group = groups.get(key(row));
    if (group) group.push(row);
    else groups.set(key(row), [row]);
  }
  return groups;
}
