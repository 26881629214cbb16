/**
 * Send and reply: compose the RFC 5322 message, store it as `sent` with its raw source, hand a
 * `received` copy to every recipient inbox of this server at once, and queue one delivery per
 * remote recipient for the outbound worker, all in one transaction with the rate-limit count.
 */
import type { App } from "../app";
import { invalid, notFound } from "../errors";
import { newId } from "../ids";
import { inboxForAddress, requireInbox } from "../inboxes/service";
import { parseAddress } from "../mail/address";
import { composeMessage, newMessageId } from "../mail/compose";
import { moveMessage } from "../outbound/outcome";
import { suppressionRefusal } from "../outbound/suppressions";
import type { AttachmentRecord, DeliveryRecord, InboxRecord, MessageRecord } from "../store";
import { assertHeaderSafe, assertRecipientCount, decodeAttachments, uniqueRecipients, validAddresses, type AttachmentInput, type OutgoingAttachment } from "./outgoing";
import { presentMessage, type Message } from "./present";
import { assertSendAllowed, takeSend, type RateLimitState } from "./rate-limit";
import { prepareContent, releasePrepared, storeReceivedMessage, type ReceivedContent } from "./receive";
import { assignThread, referencesOfReply, replySubject } from "./threading";

export interface SendInput {
  to: string[];
  cc?: string[];
  bcc?: string[];
  subject: string;
  text: string;
  html: string;
  labels?: string[];
  attachments?: AttachmentInput[];
}

export interface ReplyInput {
  text: string;
  html: string;
}

/** The stored message, and the rate-limit state the response headers report. */
export interface Sent {
  message: Message;
  rateLimit: RateLimitState;
}

/** A message ready to compose: checked, canonical, from one inbox. */
interface Draft {
  inbox: InboxRecord;
  /** The thread a reply continues; a new message starts one. */
  threadId?: string;
  to: string[];
  cc: string[];
  bcc: string[];
  subject: string;
  text: string;
  html: string;
  labels: string[];
  attachments: OutgoingAttachment[];
  inReplyTo?: string;
  references: string[];
}

export async function sendMessage(app: App, organizationId: string, inboxId: string, input: SendInput): Promise<Sent> {
  const inbox = await requireInbox(app.store, organizationId, inboxId);
  const to = validAddresses("to", input.to);
  const cc = validAddresses("cc", input.cc ?? []);
  const bcc = validAddresses("bcc", input.bcc ?? []);
  if (to.length === 0) throw invalid("to: at least one recipient is required");
  assertRecipientCount(to, cc, bcc);
  assertHeaderSafe("subject", input.subject);
  const attachments = await decodeAttachments(input.attachments ?? []);
  const { text, html, subject } = input;
  return dispatch(app, organizationId, { inbox, to, cc, bcc, subject, text, html, labels: input.labels ?? [], attachments, references: [] });
}

/**
 * Answers a message of the inbox in its thread: to its sender, or, for a message the inbox sent,
 * to its original recipients; In-Reply-To and References let the other side's client thread it.
 */
export async function replyToMessage(app: App, organizationId: string, inboxId: string, messageId: string, input: ReplyInput): Promise<Sent> {
  const inbox = await requireInbox(app.store, organizationId, inboxId);
  const original = await app.store.messages.find(organizationId, inboxId, messageId);
  if (!original) throw notFound("Message not found");
  const answersOwn = original.status !== "received";
  const to = answersOwn ? original.to : [original.from].filter(Boolean);
  if (to.length === 0) throw invalid("messageId: the message has no sender address to reply to");
  return dispatch(app, organizationId, {
    inbox,
    threadId: original.threadId,
    to,
    cc: answersOwn ? original.cc : [],
    bcc: [],
    subject: replySubject(original.subject),
    text: input.text,
    html: input.html,
    labels: [],
    attachments: [],
    inReplyTo: original.messageIdHeader ?? undefined,
    references: referencesOfReply(original),
  });
}

async function dispatch(app: App, organizationId: string, draft: Draft): Promise<Sent> {
  const now = app.clock.now();
  await assertSendAllowed(app, organizationId, now);
  const messageId = newMessageId(app.config.hostname);
  const raw = await composeMessage({
    from: draft.inbox.email,
    fromName: draft.inbox.name ?? undefined,
    to: draft.to,
    cc: draft.cc,
    bcc: draft.bcc,
    subject: draft.subject,
    text: draft.text || undefined,
    html: draft.html || undefined,
    attachments: draft.attachments.map((a) => ({ filename: a.name, contentType: a.contentType, content: a.content })),
    messageId,
    date: new Date(now),
    inReplyTo: draft.inReplyTo,
    references: draft.references,
  });
  const prepared = await prepareContent(app, [[raw]], draft.attachments);
  const source = prepared.sources[0]!;
  const { attachmentBlobIds } = prepared;
  // Concurrent sends share one commit (group commit); each still answers only once it is on disk.
  const sent = await app.store
    .transactionBatched(async (tx) => {
    // The inbox may have been deleted while the message was composed.
    const inbox = await requireInbox(tx, organizationId, draft.inbox.id);
    const rateLimit = await takeSend(app, tx, organizationId, now);
    const row = sentRow(inbox, draft, await assignThread(tx, inbox, draft, now), messageId, now);
    const attachments = attachmentRows(row.id, draft.attachments, attachmentBlobIds);
    await tx.messages.insert(row, source, attachments);

    // One copy per recipient inbox: `bob+a@` and `bob+b@` reach the same one.
    const localInboxes = new Map<string, InboxRecord>();
    const deliveries: DeliveryRecord[] = [];
    for (const recipient of uniqueRecipients(draft.to, draft.cc, draft.bcc)) {
      const local = await inboxForAddress(app, tx, recipient);
      if (local) localInboxes.set(local.id, local);
      else deliveries.push(remoteDelivery(row, recipient, await suppressionRefusal(tx, organizationId, recipient), now));
    }
    await tx.messages.insertDeliveries(deliveries);
    await tx.events.emit({ organizationId, type: "message.sent", inboxId: inbox.id, messageId: row.id, payload: presentMessage(row, attachments, deliveries) }, now);
    // A suppressed recipient is rejected at once: the response already says so (contract.md, Messages).
    const rejected = deliveries.some((delivery) => delivery.status === "rejected") && (await moveMessage(tx, row.id, "rejected", now));
    const message = presentMessage(rejected ? { ...row, status: "rejected" } : row, attachments, deliveries);

    const copy = receivedCopy(draft, row);
    for (const recipientInbox of localInboxes.values()) await storeReceivedMessage(app, tx, { inbox: recipientInbox, parsed: copy, raw: source, attachmentBlobIds, fromInboxId: inbox.id });
    return { message, rateLimit };
    })
    .finally(() => releasePrepared(app, prepared));
  if (sent.message.deliveries.some((delivery) => delivery.status === "queued")) app.queues.wake("outbound");
  return sent;
}

function sentRow(inbox: InboxRecord, draft: Draft, threadId: string, messageId: string, now: number): MessageRecord {
  return {
    id: newId("msg"),
    organizationId: inbox.organizationId,
    inboxId: inbox.id,
    threadId,
    fromInboxId: inbox.id,
    toInboxId: null,
    from: inbox.email,
    to: draft.to,
    cc: draft.cc,
    bcc: draft.bcc,
    subject: draft.subject,
    text: draft.text,
    html: draft.html,
    labels: draft.labels,
    status: "sent",
    messageIdHeader: messageId,
    inReplyTo: draft.inReplyTo ?? null,
    references: draft.references,
    authentication: null,
    externalMessageId: null,
    createdAt: now,
    updatedAt: now,
  };
}

const attachmentRows = (messageId: string, attachments: OutgoingAttachment[], blobIds: (string | null)[]): AttachmentRecord[] =>
  attachments.map((a, position) => ({ id: newId("att"), messageId, position, name: a.name ?? null, contentType: a.contentType, contentId: null, inline: false, content: a.content, blobId: blobIds[position] ?? null }));

/** The outbound worker's row: queued, due now (see src/outbound); or rejected without a try, with the reason. */
const remoteDelivery = (message: MessageRecord, recipient: string, refusal: string | undefined, now: number): DeliveryRecord => ({
  id: newId("dlv"),
  organizationId: message.organizationId,
  messageId: message.id,
  recipient,
  domain: parseAddress(recipient)!.domain,
  status: refusal ? "rejected" : "queued",
  attempts: 0,
  lastResponse: refusal ?? null,
  nextAttemptAt: refusal ? null : now,
  createdAt: now,
  updatedAt: now,
});

/** What a recipient inbox on this server receives: the message as composed, Bcc left out. */
const receivedCopy = (draft: Draft, sent: MessageRecord): ReceivedContent => ({
  messageId: sent.messageIdHeader!,
  inReplyTo: draft.inReplyTo,
  references: draft.references,
  from: sent.from,
  to: draft.to,
  cc: draft.cc,
  subject: draft.subject,
  text: draft.text,
  html: draft.html,
  attachments: draft.attachments.map((a) => ({ filename: a.name, contentType: a.contentType, content: a.content, inline: false })),
});
