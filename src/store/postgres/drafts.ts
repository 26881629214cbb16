/** Drafts with their attachments (../sqlite/drafts.ts); the drafts queue's calls take the draft's id alone. */
import { and, asc, desc, eq, getTableColumns, inArray, sql } from "drizzle-orm";
import type { DraftAttachmentRecord } from "../records";
import type { DraftsStore } from "../store";
import { withContent, type PgBlobs } from "./blobs";
import { firstRow, rowsOf, type PgDb } from "./db";
import { unheld, type Leases } from "./leases";
import { textsOf } from "./lists";
import { draftAttachments, drafts } from "./schema/index";

const EMPTY = Buffer.alloc(0);
const { content: _content, blobId: _blobId, ...summaryColumns } = getTableColumns(draftAttachments);

/**
 * `leases`: a draft being sent is held by its node's lease (./leases.ts), so that only a dead
 * node's drafts are released. `inTransaction`: find locks the row until the commit, as the
 * embedded engine's single writer holds it (two PATCHes at once: the second's write undid the first's).
 */
export function draftsStore(db: PgDb, blobs: PgBlobs, leases: Leases, inTransaction: boolean): DraftsStore {
  const leaseOf = (id: string, held: boolean) =>
    db.execute(held ? sql`UPDATE drafts SET claimed_by = ${leases.holder}, lease_until = ${leases.until()} WHERE id = ${id}` : sql`UPDATE drafts SET claimed_by = NULL, lease_until = NULL WHERE id = ${id}`);
  const whole = withContent(blobs);
  const inInbox = (organizationId: string, inboxId: string) => and(eq(drafts.organizationId, organizationId), eq(drafts.inboxId, inboxId));

  async function insertAttachments(rows: DraftAttachmentRecord[]) {
    if (rows.length) await db.insert(draftAttachments).values(rows.map((row) => (row.blobId ? { ...row, content: EMPTY } : row)));
    for (const row of rows) if (row.blobId) await blobs.claim(row.blobId);
  }

  return {
    async insert(row, attachments) {
      await db.insert(drafts).values(row);
      await insertAttachments(attachments);
    },
    async find(organizationId, inboxId, id) {
      const query = db.select().from(drafts).where(and(inInbox(organizationId, inboxId), eq(drafts.id, id)));
      const [row] = inTransaction ? await query.for("no key update") : await query;
      return row;
    },
    async list(organizationId, inboxId, page, per) {
      return db.select().from(drafts).where(inInbox(organizationId, inboxId)).orderBy(desc(drafts.createdAt), desc(drafts.id)).limit(per).offset((page - 1) * per);
    },
    async count(organizationId, inboxId) {
      return (await firstRow<{ n: number }>(db, sql`SELECT count(*)::int AS n FROM drafts WHERE inbox_id = ${inboxId} AND organization_id = ${organizationId}`))!.n;
    },
    async update(row, attachments) {
      const { id, organizationId, inboxId, createdAt: _createdAt, ...fields } = row;
      await db.update(drafts).set(fields).where(and(inInbox(organizationId, inboxId), eq(drafts.id, id)));
      if (!attachments) return;
      await db.delete(draftAttachments).where(eq(draftAttachments.draftId, id));
      await insertAttachments(attachments);
    },
    async delete(organizationId, inboxId, id) {
      const gone = await db.delete(drafts).where(and(inInbox(organizationId, inboxId), eq(drafts.id, id))).returning({ id: drafts.id });
      return gone.length > 0;
    },
    async attachmentSummaries(draftIds) {
      if (draftIds.length === 0) return [];
      return db.select(summaryColumns).from(draftAttachments).where(inArray(draftAttachments.draftId, draftIds)).orderBy(asc(draftAttachments.draftId), asc(draftAttachments.position));
    },
    async attachments(draftId) {
      const rows = await db.select().from(draftAttachments).where(eq(draftAttachments.draftId, draftId)).orderBy(asc(draftAttachments.position));
      return Promise.all(rows.map(whole));
    },
    /** One UPDATE with the status in its WHERE: of two nodes claiming at once, the second finds it claimed. */
    async claim(id, from, now) {
      const [row] = await db
        .update(drafts)
        .set({ status: "sending", attempts: sql`${drafts.attempts} + 1`, nextAttemptAt: null, updatedAt: now })
        .where(and(eq(drafts.id, id), inArray(drafts.status, from)))
        .returning();
      if (row) await leaseOf(id, true);
      return row;
    },
    async due(now, limit, busy) {
      const rows = await rowsOf<{ id: string }>(db, sql`
        SELECT id FROM drafts WHERE next_attempt_at <= ${now} AND status = 'scheduled' AND organization_id NOT IN ${textsOf(busy)}
        ORDER BY next_attempt_at, id LIMIT ${limit}`);
      return rows.map((row) => row.id);
    },
    async nextDueAfter(after) {
      const row = await firstRow<{ at: string | null }>(db, sql`SELECT min(next_attempt_at) AS at FROM drafts WHERE next_attempt_at > ${after} AND status = 'scheduled'`);
      return row?.at == null ? undefined : Number(row.at);
    },
    async markSent(id, messageId, now) {
      const sent = await db
        .update(drafts)
        .set({ status: "sent", messageId, failureReason: null, nextAttemptAt: null, updatedAt: now })
        .where(and(eq(drafts.id, id), eq(drafts.status, "sending")))
        .returning({ id: drafts.id });
      if (sent.length > 0) await leaseOf(id, false);
      return sent.length > 0;
    },
    async settle(id, settlement, now) {
      const settled = await db
        .update(drafts)
        .set({ ...settlement, updatedAt: now })
        .where(and(eq(drafts.id, id), eq(drafts.status, "sending")))
        .returning({ id: drafts.id });
      if (settled.length > 0) await leaseOf(id, false);
    },
    async releaseUnfinished(now) {
      const released = await db
        .update(drafts)
        .set({
          status: sql`CASE WHEN ${drafts.sendAt} IS NULL THEN 'draft' ELSE 'scheduled' END`,
          nextAttemptAt: sql`CASE WHEN ${drafts.sendAt} IS NULL THEN NULL ELSE ${now}::bigint END`,
          updatedAt: now,
        })
        // Never a draft a live run is sending (held, this one's too): those of this node's earlier
        // runs (freed as the store opened) and of nodes whose leases ran out. Not told apart by the
        // time of the claim: a run whose clock was ahead left drafts no later run released.
        .where(and(eq(drafts.status, "sending"), unheld(now)))
        .returning({ id: drafts.id });
      return released.length;
    },
  };
}
