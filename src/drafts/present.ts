/** Drafts as the API shows them: every field present, null where the draft has no value yet. */
import { iso } from "../clock";
import type { DraftAttachmentSummary, DraftRecord } from "../store";

export interface DraftAttachment {
  name: string | null;
  contentType: string;
  size: number;
}

/** The record's content fields as they are, its times in ISO 8601, and its attachments summarised. */
type DraftFields = Pick<DraftRecord, "id" | "inboxId" | "threadId" | "inReplyToMessageId" | "to" | "cc" | "bcc" | "subject" | "text" | "html" | "labels" | "status" | "messageId" | "failureReason">;

export interface Draft extends DraftFields {
  attachments: DraftAttachment[];
  sendAt: string | null;
  createdAt: string;
  updatedAt: string;
  _id: string;
}

export const presentDraft = (row: DraftRecord, attachments: DraftAttachmentSummary[]): Draft => ({
  id: row.id,
  inboxId: row.inboxId,
  threadId: row.threadId,
  inReplyToMessageId: row.inReplyToMessageId,
  to: row.to,
  cc: row.cc,
  bcc: row.bcc,
  subject: row.subject,
  text: row.text,
  html: row.html,
  labels: row.labels,
  attachments: attachments.filter((a) => a.draftId === row.id).map((a) => ({ name: a.name, contentType: a.contentType, size: a.size })),
  sendAt: row.sendAt === null ? null : iso(row.sendAt),
  status: row.status,
  messageId: row.messageId,
  failureReason: row.failureReason,
  createdAt: iso(row.createdAt),
  updatedAt: iso(row.updatedAt),
  _id: row.id,
});
