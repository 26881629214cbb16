/** Inboxes (../sqlite/inboxes.ts): every query takes the organization, but the look-up by address. */
import { and, desc, eq, sql } from "drizzle-orm";
import type { InboxesStore } from "../store";
import type { InboxCountsRecord } from "../records";
import { firstRow, listOf, renderedOnce, rowsOf, type PgDb } from "./db";
import { inboxes } from "./schema/index";

/** Each received message runs these (./db.ts: renderedOnce). */
const byId = renderedOnce((db) =>
  db
    .select()
    .from(inboxes)
    .where(and(eq(inboxes.organizationId, sql.placeholder("organizationId")), eq(inboxes.id, sql.placeholder("id")))),
);
const byEmail = renderedOnce((db) =>
  db
    .select()
    .from(inboxes)
    .where(sql`lower(${inboxes.email}) = lower(${sql.placeholder("email")})`),
);

/**
 * `inTransaction`: find locks the row until the commit (FOR NO KEY UPDATE: rows that refer to the
 * inbox may still be added): without, a PATCH or a draft, access rule or send for an inbox being
 * deleted met the row gone, a 500.
 */
export function inboxesStore(db: PgDb, inTransaction: boolean): InboxesStore {
  const inOrganization = (organizationId: string, id: string) => and(eq(inboxes.organizationId, organizationId), eq(inboxes.id, id));
  return {
    async insert(row) {
      // Waits for a transaction inserting the same address, then inserts nothing if it committed.
      return (await db.insert(inboxes).values(row).onConflictDoNothing().returning({ id: inboxes.id })).length > 0;
    },
    async find(organizationId, id) {
      const [row] = inTransaction ? await db.select().from(inboxes).where(inOrganization(organizationId, id)).for("no key update") : await byId(db, { organizationId, id });
      return row;
    },
    /**
     * Case-insensitive: the unique index is on lower(email). Not held as accounts.findUserByEmail is: a
     * send looks up each recipient in its transaction, in the send's order, and two sends holding
     * addresses in opposite orders would wait on each other. Two inboxes created with one address at
     * the same moment: the unique index refuses the second.
     */
    async findByEmail(email) {
      const [row] = await byEmail(db, { email });
      return row;
    },
    async list(organizationId, page, per) {
      return db.select().from(inboxes).where(eq(inboxes.organizationId, organizationId)).orderBy(desc(inboxes.createdAt), desc(inboxes.id)).limit(per).offset((page - 1) * per);
    },
    async count(organizationId) {
      return (await firstRow<{ n: number }>(db, sql`SELECT count(*)::int AS n FROM inboxes WHERE organization_id = ${organizationId}`))!.n;
    },
    /** Each inbox's totals, in the order given: messages from the threads' counters, unread ones from the partial index. */
    async counts(inboxIds) {
      if (inboxIds.length === 0) return [];
      return rowsOf<InboxCountsRecord>(
        db,
        sql`SELECT ids.id AS "inboxId",
              (SELECT coalesce(sum(message_count), 0)::int FROM threads WHERE inbox_id = ids.id) AS "messageCount",
              (SELECT count(*)::int FROM messages WHERE inbox_id = ids.id AND NOT read) AS "unreadCount"
            FROM ${listOf(inboxIds)} AS ids(id, position) ORDER BY ids.position`,
      );
    },
    async rename(organizationId, id, name, now) {
      const [row] = await db.update(inboxes).set({ name, updatedAt: now }).where(inOrganization(organizationId, id)).returning();
      return row;
    },
    async deleteMessages(organizationId, id, limit) {
      let messages = 0;
      let threads = 0;
      for (let visited = 0; messages < limit && visited < limit; visited++) {
        const thread = await firstRow<{ id: string }>(db, sql`SELECT id FROM threads WHERE organization_id = ${organizationId} AND inbox_id = ${id} LIMIT 1`);
        if (!thread) break;
        const deleted = (await rowsOf(db, sql`DELETE FROM messages WHERE id IN (SELECT id FROM messages WHERE thread_id = ${thread.id} LIMIT ${limit - messages}) RETURNING id`)).length;
        messages += deleted;
        if ((await rowsOf(db, sql`DELETE FROM threads WHERE id = ${thread.id} AND NOT EXISTS (SELECT 1 FROM messages WHERE thread_id = ${thread.id}) RETURNING id`)).length > 0) threads++;
        else await db.execute(sql`UPDATE threads SET message_count = message_count - ${deleted} WHERE id = ${thread.id}`);
      }
      return messages + threads;
    },
    /** Its threads, messages, sources, attachments and deliveries go with it (ON DELETE CASCADE). */
    async delete(organizationId, id) {
      const [row] = await db.delete(inboxes).where(inOrganization(organizationId, id)).returning();
      return row;
    },
  };
}
