/**
 * Drafts: messages composed ahead of sending, each field optional and checked as a send checks
 * it, sent on request or at `sendAt` by the drafts queue (./queue.ts). A draft is sent through the
 * send path (src/messages/send.ts), so it counts against the send rate limit and emits
 * `message.sent` like any send; it is marked `sent` in the transaction that stores its message, so
 * it goes out once. A sent draft stays, read-only, with the id of its message, until deleted.
 */
import type { App } from "../app";
import { conflict, invalid, notFound } from "../errors";
import { newId } from "../ids";
import { requireInbox } from "../inboxes/service";
import { assertHeaderSafe, assertRecipientCount, decodeAttachments, validRecipients, type AttachmentInput } from "../messages/outgoing";
import { replyRecipients, sendComposed, type Sent } from "../messages/send";
import { uniqueLabels } from "../messages/labels";
import { replySubject } from "../messages/threading";
import { withTotal, type Listing, type Page } from "../page";
import type { DraftAttachmentRecord, DraftRecord, DraftSettlement } from "../store";
import { presentDraft, type Draft } from "./present";

/** How far ahead a send may be scheduled: a year, past which a date is more likely a mistake than a plan. */
export const maxScheduleAheadMs = 365 * 24 * 60 * 60 * 1000;

/** The fields a draft may set; null clears one. */
export interface DraftFields {
  to?: string[];
  cc?: string[];
  bcc?: string[];
  subject?: string | null;
  text?: string | null;
  html?: string | null;
  labels?: string[];
  attachments?: AttachmentInput[];
  sendAt?: string | null;
}

export interface NewDraft extends DraftFields {
  /** A message of the inbox: the draft answers it, in its thread. */
  inReplyToMessageId?: string;
  replyAll?: boolean;
}

// RFC 3339 §5.6 date-time (ISO 8601 with a time zone); fractions of a second kept to the millisecond.
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/i;

export async function createDraft(app: App, organizationId: string, inboxId: string, input: NewDraft): Promise<Draft> {
  const inbox = await requireInbox(app.store, organizationId, inboxId);
  const now = app.clock.now();
  let reply: Pick<DraftRecord, "threadId" | "inReplyToMessageId" | "to" | "cc" | "subject"> = { threadId: null, inReplyToMessageId: null, to: [], cc: [], subject: null };
  if (input.inReplyToMessageId !== undefined) {
    const original = await app.store.messages.find(organizationId, inboxId, input.inReplyToMessageId);
    if (!original) throw invalid("inReplyToMessageId: no message with this id in the inbox");
    const recipients = replyRecipients(inbox, original, input.replyAll ?? false, "inReplyToMessageId");
    const addresses = (list: { address: string }[]) => list.map((mailbox) => mailbox.address);
    reply = { threadId: original.threadId, inReplyToMessageId: original.id, to: addresses(recipients.to), cc: addresses(recipients.cc), subject: replySubject(original.subject) };
  } else if (input.replyAll !== undefined) {
    throw invalid("replyAll: only for a reply draft (with inReplyToMessageId)");
  }
  const draft: DraftRecord = {
    id: newId("drf"),
    organizationId,
    inboxId,
    threadId: reply.threadId,
    inReplyToMessageId: reply.inReplyToMessageId,
    to: reply.to,
    cc: reply.cc,
    bcc: [],
    subject: reply.subject,
    text: null,
    html: null,
    labels: [],
    sendAt: null,
    status: "draft",
    messageId: null,
    failureReason: null,
    attempts: 0,
    nextAttemptAt: null,
    createdAt: now,
    updatedAt: now,
  };
  applyChanges(draft, input, now);
  const attachments = input.attachments === undefined ? [] : await stageAttachments(app, draft.id, input.attachments, now);
  try {
    await app.store.transaction(async (tx) => {
      // Held until the commit: an inbox deleted meanwhile is a 404, not a draft of no inbox.
      await requireInbox(tx, organizationId, inboxId);
      await tx.drafts.insert(draft, attachments);
    });
  } finally {
    await releaseStaged(app, attachments);
  }
  if (draft.status === "scheduled") app.queues.wake("drafts");
  return presentDraft(draft, attachments);
}

export async function listDrafts(app: App, organizationId: string, inboxId: string, page: Page): Promise<Listing<Draft>> {
  await requireInbox(app.store, organizationId, inboxId);
  const rows = await app.store.drafts.list(organizationId, inboxId, page.page, page.per);
  const attachments = await app.store.drafts.attachmentSummaries(rows.map((row) => row.id));
  return withTotal(
    page,
    rows.map((row) => presentDraft(row, attachments)),
    () => app.store.drafts.count(organizationId, inboxId),
  );
}

export async function getDraft(app: App, organizationId: string, inboxId: string, draftId: string): Promise<Draft> {
  const draft = await requireDraft(app, organizationId, inboxId, draftId);
  return presentDraft(draft, await app.store.drafts.attachmentSummaries([draft.id]));
}

/**
 * Changes the fields given. A sent draft, or one being sent, no longer changes (409). A scheduled
 * draft stays scheduled unless `sendAt: null` unschedules it; a failed one becomes a draft again,
 * or scheduled with a new `sendAt`.
 */
export async function updateDraft(app: App, organizationId: string, inboxId: string, draftId: string, input: DraftFields): Promise<Draft> {
  const current = await requireDraft(app, organizationId, inboxId, draftId);
  assertChangeable(current);
  const now = app.clock.now();
  // Attachments are staged before the transaction: a change that would be refused is refused first.
  if (input.attachments !== undefined) applyChanges({ ...current }, input, now);
  const attachments = input.attachments === undefined ? undefined : await stageAttachments(app, draftId, input.attachments, now);
  try {
    const draft = await app.store.transaction(async (tx) => {
      // Applied to the draft as it is now, held until the commit: a change made meanwhile (another
      // PATCH, a claim by the queue) stands, or this one is refused.
      const latest = await tx.drafts.find(organizationId, inboxId, draftId);
      if (!latest) throw notFound("Draft not found");
      assertChangeable(latest);
      const changed: DraftRecord = { ...latest, updatedAt: now };
      applyChanges(changed, input, now);
      await tx.drafts.update(changed, attachments);
      return changed;
    });
    if (draft.status === "scheduled") app.queues.wake("drafts");
    return presentDraft(draft, attachments ?? (await app.store.drafts.attachmentSummaries([draft.id])));
  } finally {
    await releaseStaged(app, attachments);
  }
}

/** Deleting a scheduled draft cancels its send; one being sent cannot be deleted until it settles (409). */
/** Deletes the draft and returns it as it was, as every DELETE returns what it deleted. */
export async function deleteDraft(app: App, organizationId: string, inboxId: string, draftId: string): Promise<Draft> {
  return app.store.transaction(async (tx) => {
    const draft = await tx.drafts.find(organizationId, inboxId, draftId);
    if (!draft) throw notFound("Draft not found");
    if (draft.status === "sending") throw beingSent();
    const attachments = await tx.drafts.attachmentSummaries([draft.id]);
    await tx.drafts.delete(organizationId, inboxId, draftId);
    return presentDraft(draft, attachments);
  });
}

/**
 * Sends the draft now (a scheduled or failed one too): 422 naming what it lacks, 409 when it was
 * sent or is being sent. Should the send be refused (the rate limit, say), the draft is left as it
 * was and the refusal is the answer.
 */
export async function sendDraftNow(app: App, organizationId: string, inboxId: string, draftId: string): Promise<Sent> {
  const draft = await requireDraft(app, organizationId, inboxId, draftId);
  assertChangeable(draft);
  assertComplete(draft);
  // In a transaction: on PostgreSQL the claim and its node's lease are two statements, committed together.
  const claimed = await app.store.transaction((tx) => tx.drafts.claim(draft.id, [draft.status], app.clock.now()));
  if (!claimed) {
    // It changed since it was read: the answer says how (deleted, sent, being sent, or changed).
    assertChangeable(await requireDraft(app, organizationId, inboxId, draftId));
    throw conflict("Draft was changed while it was being sent; send it again");
  }
  try {
    return await sendClaimed(app, claimed);
  } catch (error) {
    await app.store.drafts.settle(draft.id, { status: draft.status, nextAttemptAt: draft.nextAttemptAt, failureReason: draft.failureReason }, app.clock.now());
    throw error;
  }
}

/** Sends a draft this process claimed (status `sending`), and marks it sent with the message's commit. */
export async function sendClaimed(app: App, draft: DraftRecord): Promise<Sent> {
  const attachments = await app.store.drafts.attachments(draft.id);
  return sendComposed(
    app,
    draft.organizationId,
    draft.inboxId,
    {
      to: draft.to,
      cc: draft.cc,
      bcc: draft.bcc,
      subject: draft.subject ?? "",
      text: draft.text ?? "",
      html: draft.html ?? "",
      labels: draft.labels,
      attachments: attachments.map((a) => ({ name: a.name ?? undefined, contentType: a.contentType, content: a.content })),
      inReplyToMessageId: draft.inReplyToMessageId ?? undefined,
    },
    async (tx, messageId) => {
      if (!(await tx.drafts.markSent(draft.id, messageId, app.clock.now()))) throw conflict("Draft is no longer being sent");
    },
  );
}

async function requireDraft(app: App, organizationId: string, inboxId: string, draftId: string): Promise<DraftRecord> {
  await requireInbox(app.store, organizationId, inboxId);
  const draft = await app.store.drafts.find(organizationId, inboxId, draftId);
  if (!draft) throw notFound("Draft not found");
  return draft;
}

const beingSent = () => conflict("Draft is being sent");

function assertChangeable(draft: DraftRecord): asserts draft is DraftRecord & { status: DraftSettlement["status"] } {
  if (draft.status === "sending") throw beingSent();
  if (draft.status === "sent") throw conflict(`Draft was already sent (message ${draft.messageId})`);
}

/** What a send needs: 422 naming every field missing. */
function assertComplete(draft: DraftRecord): void {
  const missing = [draft.to.length === 0 && "to", draft.subject === null && "subject", draft.text === null && draft.html === null && "text or html"].filter(Boolean);
  if (missing.length > 0) throw invalid(`${missing.join(", ")}: required to send the draft`);
}

/** Applies the fields given to `draft`, checked as a send checks them, with its schedule; attachments are staged apart (stageAttachments). */
function applyChanges(draft: DraftRecord, input: DraftFields, now: number): void {
  for (const field of ["to", "cc", "bcc"] as const) {
    const list = input[field];
    if (list === undefined) continue;
    validRecipients(field, list);
    draft[field] = list;
  }
  assertRecipientCount(draft.to, draft.cc, draft.bcc);
  if (input.subject) assertHeaderSafe("subject", input.subject);
  if (input.subject !== undefined) draft.subject = input.subject;
  if (input.text !== undefined) draft.text = input.text;
  if (input.html !== undefined) draft.html = input.html;
  if (input.labels !== undefined) draft.labels = uniqueLabels(input.labels);
  schedule(draft, input.sendAt, now);
  if (draft.status === "scheduled") assertComplete(draft);
}

/**
 * The draft's schedule after a change: `sendAt` given schedules it (null unschedules it); without
 * it, a scheduled draft stays scheduled and any other becomes a draft.
 */
function schedule(draft: DraftRecord, sendAt: string | null | undefined, now: number): void {
  if (sendAt !== undefined) draft.sendAt = sendAt === null ? null : sendTime(sendAt, now);
  else if (draft.status !== "scheduled") draft.sendAt = null;
  draft.status = draft.sendAt === null ? "draft" : "scheduled";
  draft.nextAttemptAt = draft.sendAt;
  draft.failureReason = null;
  draft.attempts = 0;
}

function sendTime(sendAt: string, now: number): number {
  const date = DATE_TIME.exec(sendAt);
  // Date.parse rolls 31 February over into March: the day must exist in its month.
  const dayExists = date && new Date(Date.UTC(Number(date[1]), Number(date[2]) - 1, Number(date[3]))).getUTCDate() === Number(date[3]);
  const at = dayExists ? Date.parse(sendAt) : NaN;
  if (Number.isNaN(at)) throw invalid("sendAt: must be an ISO 8601 date-time with a time zone, such as 2030-01-31T09:00:00Z");
  if (at <= now) throw invalid("sendAt: must be in the future");
  if (at > now + maxScheduleAheadMs) throw invalid("sendAt: must be at most 365 days ahead");
  return at;
}

/** Decoded and checked as a send's; large contents staged ahead of the transaction (Store.blobs). */
async function stageAttachments(app: App, draftId: string, list: AttachmentInput[], now: number): Promise<DraftAttachmentRecord[]> {
  const rows: DraftAttachmentRecord[] = [];
  try {
    for (const [position, attachment] of (await decodeAttachments(list)).entries()) {
      const stored = await app.store.blobs.prepare([attachment.content], now);
      rows.push({ draftId, position, name: attachment.name ?? null, contentType: attachment.contentType, size: attachment.content.byteLength, content: attachment.content, blobId: stored.blobId });
    }
    return rows;
  } catch (error) {
    await releaseStaged(app, rows);
    throw error;
  }
}

/** Blobs staged for attachments that no committed row claimed. */
function releaseStaged(app: App, rows: DraftAttachmentRecord[] | undefined): Promise<void> {
  return app.store.blobs.release((rows ?? []).flatMap((row) => (row.blobId ? [row.blobId] : [])));
}
