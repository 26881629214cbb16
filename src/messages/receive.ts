/**
 * Storing a received message: the one path for mail accepted over SMTP and for local copies of
 * messages sent on this server. Thread, message, raw source, attachments, thread counters and the
 * `message.received` event commit together, before the caller answers 250 (or 201).
 */
import type { App } from "../app";
import { newId } from "../ids";
import type { ParsedMessage } from "../mail/parse";
import type { Authentication } from "../smtp/authenticate";
import type { Aggregates, AttachmentRecord, InboxRecord, MessageRecord, StoredBytes, Transaction } from "../store";
import { presentMessage, type Message } from "./present";
import { assignThread, messageIdsIn, normalizeMessageId } from "./threading";

/** What is stored of a received message: the fields of `parseMessage`'s result that matter here. */
export type ReceivedContent = Pick<ParsedMessage, "messageId" | "inReplyTo" | "references" | "from" | "fromName" | "to" | "cc" | "replyTo" | "subject" | "text" | "html" | "attachments">;

export interface ReceivedMessageInput {
  /** The recipient inbox (e.g. `app.store.inboxes.findByEmail(rcpt)`); the message joins its organization. */
  inbox: InboxRecord;
  parsed: ReceivedContent;
  /** The RFC 5322 bytes as accepted, or as prepared for storage ahead of the transaction (prepareContent). */
  raw: Uint8Array | StoredBytes;
  /** Blobs prepared for the attachments' contents, by position (prepareContent); none: stored in their rows. */
  attachmentBlobIds?: (string | null)[];
  /** SPF, DKIM, DMARC (and ARC) results, shown on get. */
  authentication?: Authentication;
  /** The sending inbox, when the message comes from an inbox of this server. */
  fromInboxId?: string;
  /** Received over SMTP and analysed: MessageRecord.receivedDigest; LOCAL_COPY_DIGEST for a copy from an inbox of this server. */
  receivedDigest?: string;
  externalMessageId?: string;
}

/**
 * The receivedDigest of a copy delivered from an inbox of this server to another: it never came
 * over SMTP and is never sent again, so no message is its resend. (A NULL digest, which copies
 * stored before digests were kept have, matches any message under its Message-ID.)
 */
export const LOCAL_COPY_DIGEST = "local copy";

/**
 * Stores one received message, in the caller's transaction, and returns it as the API shows it.
 */
export async function storeReceivedMessage(app: App, tx: Transaction, input: ReceivedMessageInput): Promise<Message> {
  const { inbox, parsed } = input;
  const now = app.clock.now();
  return tx.transaction(async (tx) => {
    const threadId = await assignThread(tx, inbox, parsed, now);
    const row: MessageRecord = {
      id: newId("msg"),
      organizationId: inbox.organizationId,
      inboxId: inbox.id,
      threadId,
      fromInboxId: input.fromInboxId ?? null,
      toInboxId: inbox.id,
      from: parsed.from ?? "",
      fromName: displayName(parsed.fromName),
      to: parsed.to,
      cc: parsed.cc,
      bcc: [],
      replyTo: parsed.replyTo ?? [],
      subject: parsed.subject,
      text: parsed.text ?? null,
      html: parsed.html ?? null,
      labels: [],
      read: false,
      status: "received",
      messageIdHeader: normalizeMessageId(parsed.messageId) ?? null,
      receivedDigest: input.receivedDigest ?? null,
      inReplyTo: messageIdsIn(parsed.inReplyTo)[0] ?? null,
      references: parsed.references.flatMap(messageIdsIn),
      authentication: input.authentication ?? null,
      externalMessageId: input.externalMessageId ?? null,
      createdAt: now,
      updatedAt: now,
    };
    const attachments: AttachmentRecord[] = parsed.attachments.map((attachment, position) => ({
      id: newId("att"),
      messageId: row.id,
      position,
      name: attachment.filename ?? null,
      contentType: attachment.contentType,
      contentId: attachment.contentId ?? null,
      inline: attachment.inline,
      content: attachment.content,
      blobId: input.attachmentBlobIds?.[position] ?? null,
    }));
    await tx.messages.insert(row, "blobId" in input.raw ? input.raw : { bytes: input.raw, blobId: null }, attachments);
    const message = presentMessage(row, attachments, []);
    await tx.events.emit({ organizationId: inbox.organizationId, type: "message.received", inboxId: inbox.id, messageId: row.id, payload: message }, now);
    return message;
  });
}

/** A received display name as stored: white space runs as one space, at most 256 code points, null when empty. */
function displayName(name: string | undefined): string | null {
  const cleaned = name?.replace(/[\s\x00-\x1f\x7f]+/g, " ").trim() ?? "";
  return (cleaned.length > 256 ? [...cleaned].slice(0, 256).join("").trim() : cleaned) || null;
}

/** The large parts of a message, written ahead of the transaction that stores it (store/blobs.ts). */
export interface PreparedContent {
  /** One per copy that is stored (received copies differ in their trace fields). */
  sources: StoredBytes[];
  /** By position, shared by every copy; null: small enough for its row. */
  attachmentBlobIds: (string | null)[];
  /** The blobs written here, for releasePrepared. */
  staged: string[];
}

/**
 * Writes a message's sources and attachment contents that are too large for one statement on the
 * event loop, before its transaction. A source is given in parts, or as stored already (a
 * received copy's trace fields before the accepted message's blob). Give the result to
 * `releasePrepared` after that transaction, whether it committed or not: what no row claimed is
 * removed.
 */
export async function prepareContent(app: App, sources: (Uint8Array[] | StoredBytes)[], attachments: { content: Uint8Array }[]): Promise<PreparedContent> {
  const now = app.clock.now();
  const prepared: PreparedContent = { sources: [], attachmentBlobIds: [], staged: [] };
  const prepare = async (parts: Uint8Array[]) => {
    const stored = await app.store.blobs.prepare(parts, now);
    if (stored.blobId) prepared.staged.push(stored.blobId);
    return stored;
  };
  try {
    for (const { content } of attachments) prepared.attachmentBlobIds.push((await prepare([content])).blobId);
    for (const source of sources) prepared.sources.push(Array.isArray(source) ? await prepare(source) : source);
    return prepared;
  } catch (error) {
    await releasePrepared(app, prepared);
    throw error;
  }
}

export async function releasePrepared(app: App, { staged }: PreparedContent): Promise<void> {
  // Most messages stage nothing: no turn on the connection for them.
  if (staged.length > 0) await app.store.blobs.release(staged);
}

/**
 * Whether the inbox already holds this message: a sender whose 250 was lost (connection cut, our
 * crash after the commit) sends the same message again (RFC 5321 §4.1.1.4; RFC 1047), and it
 * should be accepted without a second copy. The same message: the same Message-ID, envelope
 * sender, subject and body (`receivedDigest`; other header fields may differ between attempts).
 * Another message under a Message-ID the inbox holds (ids reused, or predicted by a third party
 * who sent first) is stored beside it, never dropped after its 250 (RFC 5321 §6.1). A message
 * without a Message-ID, or without a digest, is never a duplicate.
 */
export async function alreadyReceived(store: Aggregates, inboxId: string, parsed: Pick<ReceivedContent, "messageId">, receivedDigest: string | undefined): Promise<boolean> {
  const messageId = normalizeMessageId(parsed.messageId);
  return messageId !== undefined && receivedDigest !== undefined && (await store.messages.hasReceived(inboxId, messageId, receivedDigest));
}
