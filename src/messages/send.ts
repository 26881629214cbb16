/**
 * Send, reply and forward: compose the RFC 5322 message, store it as `sent` with its raw source,
 * hand a `received` copy to every recipient inbox of this server at once, and queue one delivery
 * per remote recipient for the outbound worker, all in one transaction with the rate-limit count.
 *
 * Recipients may be written `Ada Lovelace <ada@example.com>`. The display name goes into the
 * composed To or Cc header only: the stored message (and so the API's `to`, `cc`, `bcc`, the
 * delivery records and the search) keeps bare canonical addresses, as the description's
 * "Recipient addresses" and existing clients expect. The sender's name is kept beside `from`
 * as `fromName` (the inbox's name on a sent message, the From field's name on a received one).
 */
import type { App } from "../app";
import { invalid, notFound } from "../errors";
import { newId } from "../ids";
import { inboxForAddress, requireInbox } from "../inboxes/service";
import { baseAddress, parseAddress, type Mailbox } from "../mail/address";
import { composeMessage, newMessageId } from "../mail/compose";
import { moveMessage } from "../outbound/outcome";
import { suppressionRefusal } from "../outbound/suppressions";
import { localReceiveRefusal, sendRefusal } from "../access/service";
import type { AttachmentRecord, DeliveryRecord, InboxRecord, MessageRecord, Transaction } from "../store";
import { assertHeaderSafe, assertRecipientCount, decodeAttachments, uniqueRecipients, validRecipients, type AttachmentInput, type OutgoingAttachment } from "./outgoing";
import { uniqueLabels } from "./labels";
import { presentMessage, type Message } from "./present";
import { assertSendAllowed, takeSend, type RateLimitState } from "./rate-limit";
import { LOCAL_COPY_DIGEST, prepareContent, releasePrepared, storeReceivedMessage, type ReceivedContent } from "./receive";
import { forwardBody, forwardedAttachments, forwardSubject } from "./forward";
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
  /** Also to the original's other recipients (its To and Cc, less this inbox), as mail clients' "Reply all". */
  replyAll?: boolean;
}

export interface ForwardInput {
  to: string[];
  cc?: string[];
  bcc?: string[];
  /** The note above the forwarded message; both optional, "" is none. */
  text?: string;
  html?: string;
}

/** The stored message, and the rate-limit state the response headers report. */
export interface Sent {
  message: Message;
  rateLimit: RateLimitState;
}

/**
 * What a draft sends (src/drafts/): the send body's fields, its attachments decoded; with
 * `inReplyToMessageId`, as a reply to that message of the inbox.
 */
export interface ComposedInput extends Omit<SendInput, "attachments"> {
  attachments: OutgoingAttachment[];
  inReplyToMessageId?: string;
}

/** Runs in the transaction that stores the sent message, with its id: what must commit with it. */
export type OnStored = (tx: Transaction, messageId: string) => Promise<void>;

/** A message ready to compose: checked, canonical, from one inbox. */
interface Draft {
  inbox: InboxRecord;
  /** The thread a reply continues; a new message starts one. */
  threadId?: string;
  to: Mailbox[];
  cc: Mailbox[];
  bcc: Mailbox[];
  subject: string;
  text: string;
  html: string;
  labels: string[];
  attachments: OutgoingAttachment[];
  inReplyTo?: string;
  references: string[];
}

export function sendMessage(app: App, organizationId: string, inboxId: string, input: SendInput): Promise<Sent> {
  return sendChecked(app, organizationId, inboxId, input, () => decodeAttachments(input.attachments ?? []));
}

/**
 * sendMessage with the attachments already decoded, for drafts. With `inReplyToMessageId` it goes
 * out as a reply to that message, to the recipients given: in its thread, with In-Reply-To and
 * References, as replyToMessage sends one.
 */
export function sendComposed(app: App, organizationId: string, inboxId: string, input: ComposedInput, onStored?: OnStored): Promise<Sent> {
  return sendChecked(app, organizationId, inboxId, input, async () => input.attachments, input.inReplyToMessageId, onStored);
}

/** The checks of a send, cheapest first: the attachments are decoded last. */
async function sendChecked(
  app: App,
  organizationId: string,
  inboxId: string,
  input: Omit<SendInput, "attachments">,
  attachmentsOf: () => Promise<OutgoingAttachment[]>,
  inReplyToMessageId?: string,
  onStored?: OnStored,
): Promise<Sent> {
  const inbox = await requireInbox(app.store, organizationId, inboxId);
  const { to, cc, bcc } = validRecipientLists(input);
  assertHeaderSafe("subject", input.subject);
  const original = inReplyToMessageId === undefined ? undefined : await requireMessage(app, organizationId, inboxId, inReplyToMessageId);
  const attachments = await attachmentsOf();
  const { text, html, subject } = input;
  return dispatch(
    app,
    organizationId,
    { inbox, threadId: original?.threadId, to, cc, bcc, subject, text, html, labels: uniqueLabels(input.labels ?? []), attachments, inReplyTo: original?.messageIdHeader ?? undefined, references: original ? referencesOfReply(original) : [] },
    onStored,
  );
}

async function requireMessage(app: App, organizationId: string, inboxId: string, messageId: string): Promise<MessageRecord> {
  const message = await app.store.messages.find(organizationId, inboxId, messageId);
  if (!message) throw notFound("Message not found");
  return message;
}

function validRecipientLists(input: { to: string[]; cc?: string[]; bcc?: string[] }): Pick<Draft, "to" | "cc" | "bcc"> {
  const to = validRecipients("to", input.to);
  const cc = validRecipients("cc", input.cc ?? []);
  const bcc = validRecipients("bcc", input.bcc ?? []);
  if (to.length === 0) throw invalid("to: at least one recipient is required");
  assertRecipientCount(to, cc, bcc);
  return { to, cc, bcc };
}

/**
 * Answers a message of the inbox in its thread: to its sender, or, for a message the inbox sent,
 * to its original recipients; In-Reply-To and References let the other side's client thread it.
 * With `replyAll`, an answer to a received message also goes to the original's To (in To) and Cc
 * (in Cc), less the inbox's own address (any `+tag` of it), each address once.
 */
export async function replyToMessage(app: App, organizationId: string, inboxId: string, messageId: string, input: ReplyInput): Promise<Sent> {
  const inbox = await requireInbox(app.store, organizationId, inboxId);
  const original = await requireMessage(app, organizationId, inboxId, messageId);
  const { to, cc } = replyRecipients(inbox, original, input.replyAll ?? false, "messageId");
  return dispatch(app, organizationId, {
    inbox,
    threadId: original.threadId,
    to,
    cc,
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

/**
 * Whom a reply to `original` goes to: its sender, or, for a message the inbox sent, its original
 * recipients; with `replyAll`, for a received message, also its To (in To) and Cc (in Cc), less
 * the inbox's own address (any `+tag` of it), each address once. 422 when there is no one, naming
 * `originalField`, the request's field that named the original. The
 * sender is where the author asks replies to go, its Reply-To addresses when it names any (RFC
 * 5322 §3.6.2: a web form's notification, a mailing list), else its From, as mail clients do.
 */
export function replyRecipients(inbox: InboxRecord, original: MessageRecord, replyAll: boolean, originalField: "messageId" | "inReplyToMessageId"): { to: Mailbox[]; cc: Mailbox[] } {
  const answersOwn = original.status !== "received";
  const mailboxes = (addresses: string[]): Mailbox[] => addresses.map((address) => ({ address }));
  const from: Mailbox[] = original.from ? [original.fromName ? { address: original.from, name: original.fromName } : { address: original.from }] : [];
  const sender = original.replyTo.length > 0 ? mailboxes(original.replyTo) : from;
  let to = answersOwn ? mailboxes(original.to) : sender;
  let cc = answersOwn ? mailboxes(original.cc) : [];
  if (!answersOwn && replyAll) {
    const self = baseAddress(inbox.email);
    const others = (addresses: string[]) => mailboxes(addresses).filter((mailbox) => baseAddress(mailbox.address) !== self);
    [to, cc] = onceEach([...to, ...others(original.to)], others(original.cc));
  }
  if (to.length === 0) throw invalid(`${originalField}: the message has no sender address to reply to`);
  // Received mail may name addresses with a local part in UTF-8 (RFC 6532), shown as written.
  const unsendable = [...to, ...cc].find((mailbox) => !parseAddress(mailbox.address));
  if (unsendable) throw invalid(`${originalField}: inboxd cannot send to ${unsendable.address}: a local part in UTF-8 needs SMTPUTF8 (RFC 6531), which inboxd does not send with`);
  assertRecipientCount(to, cc);
  return { to, cc };
}

/**
 * Forwards a message of the inbox, as mail clients do: a new message in a new thread of the
 * inbox (no In-Reply-To or References, so no recipient's client files it under the original
 * either), `Fwd: ` before the subject, the note (`text`, `html`) above a "Forwarded message"
 * block with the original's From, Date, Subject, To (and Cc), then its body; its attachments
 * attached again. Sent like any message: rate limit, suppressions, local copies.
 */
export async function forwardMessage(app: App, organizationId: string, inboxId: string, messageId: string, input: ForwardInput): Promise<Sent> {
  const inbox = await requireInbox(app.store, organizationId, inboxId);
  const original = await app.store.messages.find(organizationId, inboxId, messageId);
  if (!original) throw notFound("Message not found");
  const { to, cc, bcc } = validRecipientLists(input);
  const body = forwardBody(original, { text: input.text ?? "", html: input.html ?? "" });
  const attachments = forwardedAttachments(await app.store.messages.attachmentsOf([original.id]));
  return dispatch(app, organizationId, { inbox, to, cc, bcc, subject: forwardSubject(original.subject), text: body.text, html: body.html, labels: [], attachments, references: [] });
}

/** The lists without an address that an earlier one holds (compared case-insensitively), in order. */
function onceEach(...lists: Mailbox[][]): Mailbox[][] {
  const seen = new Set<string>();
  return lists.map((list) =>
    list.filter((mailbox) => {
      const key = mailbox.address.toLowerCase();
      return !seen.has(key) && !!seen.add(key);
    }),
  );
}

async function dispatch(app: App, organizationId: string, draft: Draft, onStored?: OnStored): Promise<Sent> {
  const now = app.clock.now();
  await assertSendAllowed(app, organizationId, now);
  // An inbox of a service domain without a dot (INBOXD_MAIL_DOMAIN left at a one-label machine
  // name, which the start warns about) has no address a message can carry.
  if (!parseAddress(draft.inbox.email)) throw invalid(`This inbox's address ${draft.inbox.email} cannot send mail: its domain has no dot (INBOXD_MAIL_DOMAIN must be a domain such as example.com)`);
  const messageId = newMessageId(app.config.hostname);
  const raw = await composeMessage({
    from: draft.inbox.email,
    fromName: draft.inbox.name ?? undefined,
    to: draft.to,
    cc: draft.cc,
    bcc: draft.bcc,
    subject: draft.subject,
    // "" is no such part: an empty html sends text/plain alone, an empty text text/html alone;
    // with neither, an empty text/plain.
    text: draft.text || (draft.html ? undefined : ""),
    html: draft.html || undefined,
    attachments: draft.attachments.map((a) => ({ filename: a.name, contentType: a.contentType, content: a.content, cid: a.contentId })),
    messageId,
    date: new Date(now),
    inReplyTo: draft.inReplyTo,
    references: draft.references,
  });
  // A local recipient's copy of an HTML-only message has the text its HTML makes, as the same
  // message received over SMTP has (its parse makes one): shown, and searched. Before, such a copy
  // was found by no word. The sender's own message keeps what was sent. Made only for a send with
  // a recipient here (the conversion holds the event loop: 40-130 ms for 128 KB of HTML), and
  // with the parser loaded on demand (the idle process does not hold it: docs/benchmarks.md).
  const htmlOnly = !draft.text && draft.html;
  const textMade = htmlOnly && (await hasLocalRecipient(app, draft)) ? await textOfHtml(htmlOnly) : undefined;
  const prepared = await prepareContent(app, [[raw]], draft.attachments);
  const source = prepared.sources[0]!;
  const { attachmentBlobIds } = prepared;
  // Concurrent sends share one commit (group commit); each still answers only once it is on disk.
  const sent = await app.store
    .transactionBatched(async (tx) => {
    // A transaction that emits takes its organizations' event locks before any row (an inbox's
    // delete too), so that none waits for another in a cycle: the recipients are looked up first,
    // holding nothing, to know whose events this send emits (its own, its local copies').
    const recipients: { recipient: string; found?: InboxRecord }[] = [];
    for (const recipient of uniqueRecipients(draft.to, draft.cc, draft.bcc)) recipients.push({ recipient, found: await inboxForAddress(app, tx, recipient) });
    await tx.events.holdOrder([organizationId, ...recipients.flatMap(({ found }) => (found ? [found.organizationId] : []))]);
    // Stamped here, not when the request came: a send that composed a large message meanwhile would
    // otherwise be listed (newest first, by createdAt) below mail stored before it, and a client
    // that polls the first page would never see it there. Once the organization's lock is held (to
    // the commit, on PostgreSQL), its sends' stamps follow their commits.
    const storedAt = app.clock.now();
    // Held until the commit (InboxesStore.find); it may have been deleted while the message was composed.
    const inbox = await requireInbox(tx, organizationId, draft.inbox.id);
    const row = sentRow(inbox, draft, await assignThread(tx, inbox, draft, storedAt), messageId, storedAt);
    const attachments = attachmentRows(row.id, draft.attachments, attachmentBlobIds);
    await tx.messages.insert(row, source, attachments);
    await onStored?.(tx, row.id);

    // One copy per recipient inbox: `bob+a@` and `bob+b@` reach the same one.
    const localInboxes = new Map<string, InboxRecord>();
    const deliveries: DeliveryRecord[] = [];
    // A recipient the send rules, its own inbox's receive rules or a suppression refuse is rejected without a try.
    const sendRules = await tx.accessRules.applying(organizationId, inbox.id, "send");
    for (const { recipient, found } of recipients) {
      // Held too: one deleted since it was looked up gets no copy, as if deleted right after the send.
      const local = found && (await tx.inboxes.find(found.organizationId, found.id));
      if (found && !local) continue;
      const refusal = sendRefusal(sendRules, recipient) ?? (local ? await localReceiveRefusal(tx, local, inbox.email, recipient) : await suppressionRefusal(tx, organizationId, recipient));
      if (local && !refusal) localInboxes.set(local.id, local);
      else deliveries.push(remoteDelivery(row, recipient, refusal, storedAt));
    }
    await tx.messages.insertDeliveries(deliveries);
    // The organization's send window is locked until the commit (on PostgreSQL, a row lock).
    const rateLimit = await takeSend(app, tx, organizationId, storedAt);
    await tx.events.emit({ organizationId, type: "message.sent", inboxId: inbox.id, messageId: row.id, payload: presentMessage(row, attachments, deliveries, app.config.deliveryRetryDelays) }, storedAt);
    // A suppressed or refused recipient is rejected at once: the response already says so (docs/api.md, Messages).
    const rejected = deliveries.some((delivery) => delivery.status === "rejected") && (await moveMessage(tx, row.id, "rejected", storedAt, app.config.deliveryRetryDelays));
    const message = presentMessage(rejected ? { ...row, status: "rejected" } : row, attachments, deliveries, app.config.deliveryRetryDelays);

    // An inbox made since the look-up before the transaction: its copy's text made now.
    const copyText = draft.text || textMade || (htmlOnly && localInboxes.size > 0 ? await textOfHtml(htmlOnly) : undefined);
    const copy = receivedCopy({ ...draft, text: copyText ?? "" }, row);
    for (const recipientInbox of localInboxes.values()) await storeReceivedMessage(app, tx, { inbox: recipientInbox, parsed: copy, raw: source, attachmentBlobIds, fromInboxId: inbox.id, receivedDigest: LOCAL_COPY_DIGEST });
    return { message, rateLimit };
    })
    .finally(() => releasePrepared(app, prepared));
  if (sent.message.deliveries.some((delivery) => delivery.status === "queued")) app.queues.wake("outbound");
  return sent;
}

const textOfHtml = async (html: string) => (await import("../mail/parse")).htmlToText(html);

/** Whether a recipient is an inbox of this server (looked up again in the send's transaction). */
async function hasLocalRecipient(app: App, draft: Draft): Promise<boolean> {
  for (const recipient of uniqueRecipients(draft.to, draft.cc, draft.bcc)) if (await inboxForAddress(app, app.store, recipient)) return true;
  return false;
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
    // The name the message was composed with: the inbox renamed meanwhile, the API showed the new
    // name where the From field sent and kept had the old one.
    fromName: draft.inbox.name || null,
    to: addresses(draft.to),
    cc: addresses(draft.cc),
    bcc: addresses(draft.bcc),
    replyTo: [],
    subject: draft.subject,
    // An empty body part is none: left out, as an optional field without a value is.
    text: draft.text || null,
    html: draft.html || null,
    labels: draft.labels,
    read: true,
    status: "sent",
    messageIdHeader: messageId,
    receivedDigest: null,
    inReplyTo: draft.inReplyTo ?? null,
    references: draft.references,
    authentication: null,
    externalMessageId: null,
    createdAt: now,
    updatedAt: now,
  };
}

const addresses = (mailboxes: Mailbox[]) => mailboxes.map((mailbox) => mailbox.address);

const attachmentRows = (messageId: string, attachments: OutgoingAttachment[], blobIds: (string | null)[]): AttachmentRecord[] =>
  attachments.map((a, position) => ({ id: newId("att"), messageId, position, name: a.name ?? null, contentType: a.contentType, contentId: a.contentId ?? null, inline: a.contentId !== undefined, content: a.content, blobId: blobIds[position] ?? null }));

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
  fromName: sent.fromName ?? undefined,
  to: addresses(draft.to),
  cc: addresses(draft.cc),
  subject: draft.subject,
  // As parsing the composed message gives it: no part, no field (an HTML part makes a text).
  text: draft.text || undefined,
  html: draft.html || undefined,
  attachments: draft.attachments.map((a) => ({ filename: a.name, contentType: a.contentType, content: a.content, inline: false })),
});
