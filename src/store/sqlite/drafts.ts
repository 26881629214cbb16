/**
 * Drafts with their attachments (migrations/0130). Reads take the organization and the inbox, so
 * one tenant never sees another's; the drafts queue's calls take the draft's id alone.
 */
import { and, asc, desc, eq, getTableColumns, inArray, notInArray, sql } from "drizzle-orm";
import type { DraftSettlement } from "../store";
import type { DraftStatus } from "../records";
import { withContent, type BlobStore } from "./blobs";
import type { Db } from "./db";
import { placeholdersOf } from "../placeholders";
import { draftAttachments, drafts } from "./schema/index";

export type DraftRow = typeof drafts.$inferSelect;
export type DraftAttachmentRow = typeof draftAttachments.$inferSelect;

const EMPTY = Buffer.alloc(0);

export const draftsStore = (db: Db, blobs: BlobStore) => {
  const whole = withContent(blobs);
  /**
   * The drafts this process has claimed and not yet marked sent or settled. One process per data
   * dir: every other `sending` draft is an earlier run's. Told apart by the time of the claim
   * instead, one made by a run whose clock was ahead (corrected by NTP after a reboot) was never
   * released, and refused every change with 409 "being sent".
   */
  const claimedHere = new Set<string>();
  const insertDraft = db.insert(drafts).values(placeholdersOf(drafts)).prepare();
  const insertAttachment = db.insert(draftAttachments).values(placeholdersOf(draftAttachments)).prepare();
  const inInbox = (organizationId: string, inboxId: string) => and(eq(drafts.organizationId, organizationId), eq(drafts.inboxId, inboxId));
  const counted = db.$client.query<{ n: number }, { organizationId: string; inboxId: string }>(
    "SELECT count(*) AS n FROM drafts WHERE inbox_id = $inboxId AND organization_id = $organizationId",
  );
  const due = db.$client.query<{ id: string }, { now: number; limit: number; busy: string }>(
    "SELECT id FROM drafts WHERE next_attempt_at <= $now AND status = 'scheduled' AND organization_id NOT IN (SELECT value FROM json_each($busy)) ORDER BY next_attempt_at, rowid LIMIT $limit",
  );
  const nextDue = db.$client.query<{ at: number | null }, { after: number }>(
    "SELECT min(next_attempt_at) AS at FROM drafts WHERE next_attempt_at > $after AND status = 'scheduled'",
  );

  function insertAttachments(rows: DraftAttachmentRow[]) {
    for (const row of rows) {
      insertAttachment.run(row.blobId ? { ...row, content: EMPTY } : row);
      if (row.blobId) blobs.claim(row.blobId);
    }
  }

  return {
    insert(row: DraftRow, attachments: DraftAttachmentRow[]) {
      insertDraft.run(row);
      insertAttachments(attachments);
    },
    find(organizationId: string, inboxId: string, id: string): DraftRow | undefined {
      return db.select().from(drafts).where(and(inInbox(organizationId, inboxId), eq(drafts.id, id))).get();
    },
    list(organizationId: string, inboxId: string, page: number, per: number): DraftRow[] {
      return db
        .select()
        .from(drafts)
        .where(inInbox(organizationId, inboxId))
        .orderBy(desc(drafts.createdAt), desc(sql`drafts.rowid`))
        .limit(per)
        .offset((page - 1) * per)
        .all();
    },
    count(organizationId: string, inboxId: string): number {
      return counted.get({ organizationId, inboxId })!.n;
    },
    update(row: DraftRow, attachments?: DraftAttachmentRow[]) {
      const { id, organizationId, inboxId, createdAt, ...fields } = row;
      db.update(drafts).set(fields).where(and(inInbox(organizationId, inboxId), eq(drafts.id, id))).run();
      if (!attachments) return;
      db.delete(draftAttachments).where(eq(draftAttachments.draftId, id)).run();
      insertAttachments(attachments);
    },
    delete(organizationId: string, inboxId: string, id: string): boolean {
      return db.delete(drafts).where(and(inInbox(organizationId, inboxId), eq(drafts.id, id))).returning({ id: drafts.id }).get() !== undefined;
    },
    attachmentSummaries(draftIds: string[]) {
      if (draftIds.length === 0) return [];
      const { content: _content, blobId: _blobId, ...summary } = getTableColumns(draftAttachments);
      return db.select(summary).from(draftAttachments).where(inArray(draftAttachments.draftId, draftIds)).orderBy(asc(draftAttachments.draftId), asc(draftAttachments.position)).all();
    },
    attachments(draftId: string): DraftAttachmentRow[] {
      return db.select().from(draftAttachments).where(eq(draftAttachments.draftId, draftId)).orderBy(asc(draftAttachments.position)).all().map(whole);
    },
    claim(id: string, from: DraftStatus[], now: number): DraftRow | undefined {
      const claimed = db
        .update(drafts)
        .set({ status: "sending", attempts: sql`${drafts.attempts} + 1`, nextAttemptAt: null, updatedAt: now })
        .where(and(eq(drafts.id, id), inArray(drafts.status, from)))
        .returning()
        .get();
      if (claimed) claimedHere.add(id);
      return claimed;
    },
    due(now: number, limit: number, busy: readonly string[]): string[] {
      return due.all({ now, limit, busy: JSON.stringify(busy) }).map((row) => row.id);
    },
    nextDueAfter(after: number): number | undefined {
      return nextDue.get({ after })?.at ?? undefined;
    },
    markSent(id: string, messageId: string, now: number): boolean {
      claimedHere.delete(id);
      const sent = db
        .update(drafts)
        .set({ status: "sent", messageId, failureReason: null, nextAttemptAt: null, updatedAt: now })
        .where(and(eq(drafts.id, id), eq(drafts.status, "sending")))
        .returning({ id: drafts.id })
        .get();
      return sent !== undefined;
    },
    settle(id: string, settlement: DraftSettlement, now: number) {
      claimedHere.delete(id);
      db.update(drafts)
        .set({ ...settlement, updatedAt: now })
        .where(and(eq(drafts.id, id), eq(drafts.status, "sending")))
        .run();
    },
    releaseUnfinished(now: number): number {
      return db
        .update(drafts)
        .set({
          status: sql`CASE WHEN ${drafts.sendAt} IS NULL THEN 'draft' ELSE 'scheduled' END`,
          nextAttemptAt: sql`CASE WHEN ${drafts.sendAt} IS NULL THEN NULL ELSE ${now} END`,
          updatedAt: now,
        })
        .where(and(eq(drafts.status, "sending"), notInArray(drafts.id, [...claimedHere])))
        .returning({ id: drafts.id })
        .all().length;
    },
  };
};
