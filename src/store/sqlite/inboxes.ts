/** Inboxes: every query takes the organization, so one tenant never sees another's inbox. */
import { and, desc, eq, sql } from "drizzle-orm";
import { inboxes } from "./schema/index";
import type { Db } from "./db";
import type { InboxCountsRecord } from "../records";

export type InboxRow = typeof inboxes.$inferSelect;

export const inboxesStore = (db: Db) => {
  // Prepared once: every message route resolves its inbox, and every recipient is looked up by address.
  const byId = db
    .select()
    .from(inboxes)
    .where(and(eq(inboxes.organizationId, sql.placeholder("organizationId")), eq(inboxes.id, sql.placeholder("id"))))
    .prepare();
  const byEmail = db.select().from(inboxes).where(eq(inboxes.email, sql.placeholder("email"))).prepare();
  // Messages from the threads' counters (one row per thread), unread ones from migration 0200's partial index.
  const counts = db.$client.query<InboxCountsRecord, { inboxIds: string }>(
    `SELECT ids.value AS inboxId,
       (SELECT coalesce(sum(message_count), 0) FROM threads WHERE inbox_id = ids.value) AS messageCount,
       (SELECT count(*) FROM messages WHERE inbox_id = ids.value AND read = 0) AS unreadCount
     FROM json_each($inboxIds) AS ids`,
  );
  const inOrganization = db.$client.query<{ n: number }, { organizationId: string }>("SELECT count(*) AS n FROM inboxes WHERE organization_id = $organizationId");
  const aThread = db.$client.query<{ id: string }, { organizationId: string; id: string }>("SELECT id FROM threads WHERE organization_id = $organizationId AND inbox_id = $id LIMIT 1");
  const messagesOfThread = db.$client.query<never, { threadId: string; limit: number }>("DELETE FROM messages WHERE id IN (SELECT id FROM messages WHERE thread_id = $threadId LIMIT $limit)");
  const threadEmptied = db.$client.query<never, { threadId: string }>("DELETE FROM threads WHERE id = $threadId AND NOT EXISTS (SELECT 1 FROM messages WHERE thread_id = $threadId)");
  const threadLessBy = db.$client.query<never, { threadId: string; deleted: number }>("UPDATE threads SET message_count = message_count - $deleted WHERE id = $threadId");

  return {
    insert(row: InboxRow): boolean {
      return db.insert(inboxes).values(row).onConflictDoNothing().returning({ id: inboxes.id }).all().length > 0;
    },
    find(organizationId: string, id: string): InboxRow | undefined {
      return byId.get({ organizationId, id });
    },
    /** Across organizations: inbound mail and local delivery route by address (case-insensitive column). */
    findByEmail(email: string): InboxRow | undefined {
      return byEmail.get({ email });
    },
    list(organizationId: string, page: number, per: number): InboxRow[] {
      return db.select().from(inboxes).where(eq(inboxes.organizationId, organizationId)).orderBy(desc(inboxes.createdAt), desc(inboxes.id)).limit(per).offset((page - 1) * per).all();
    },
    count(organizationId: string): number {
      return inOrganization.get({ organizationId })!.n;
    },
    /** Each inbox's totals, in the order given. */
    counts(inboxIds: string[]): InboxCountsRecord[] {
      if (inboxIds.length === 0) return [];
      return counts.all({ inboxIds: JSON.stringify(inboxIds) });
    },
    rename(organizationId: string, id: string, name: string | null, now: number): InboxRow | undefined {
      return db.update(inboxes).set({ name, updatedAt: now }).where(and(eq(inboxes.organizationId, organizationId), eq(inboxes.id, id))).returning().get();
    },
    deleteMessages(organizationId: string, id: string, limit: number): number {
      let messages = 0;
      let threads = 0;
      for (let visited = 0; messages < limit && visited < limit; visited++) {
        const thread = aThread.get({ organizationId, id });
        if (!thread) break;
        const deleted = messagesOfThread.run({ threadId: thread.id, limit: limit - messages }).changes;
        messages += deleted;
        if (threadEmptied.run({ threadId: thread.id }).changes > 0) threads++;
        else threadLessBy.run({ threadId: thread.id, deleted });
      }
      return messages + threads;
    },
    /** Its threads, messages, sources, attachments and deliveries go with it (ON DELETE CASCADE). */
    delete(organizationId: string, id: string): InboxRow | undefined {
      return db.delete(inboxes).where(and(eq(inboxes.organizationId, organizationId), eq(inboxes.id, id))).returning().get();
    },
  };
};
