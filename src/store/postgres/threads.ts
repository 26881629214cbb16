/** Threads (../sqlite/threads.ts): a conversation in one inbox, with counters kept in step with its messages. */
import { and, desc, eq, inArray, sql } from "drizzle-orm";
import { PREVIEW_SOURCE_CHARS, type ThreadOverviewRecord } from "../records";
import type { ThreadsStore } from "../store";
import { placeholdersOf } from "../placeholders";
import { firstRow, listOf, renderedOnce, rowsOf, type PgDb } from "./db";
import { messageLabels, threads } from "./schema/index";

/** A new thread for each received message that starts one (./db.ts: renderedOnce). */
const insertThread = renderedOnce((db) => db.insert(threads).values(placeholdersOf(threads)));


export function threadsStore(db: PgDb): ThreadsStore {
  const labeledThreadIds = (inboxId: string, label: string) =>
    db
      .selectDistinct({ threadId: messageLabels.threadId })
      .from(messageLabels)
      .where(and(eq(messageLabels.inboxId, inboxId), eq(messageLabels.label, label)));
  return {
    async insert(row) {
      const full = { ...row, messageCount: 1, lastMessageAt: row.createdAt, updatedAt: row.createdAt };
      await insertThread(db, full);
      return full;
    },
    async addMessage(id, now) {
      await db
        .update(threads)
        // A message dated before one already in the thread (a send composed while a reply arrived) never moves its activity back.
        .set({ messageCount: sql`${threads.messageCount} + 1`, lastMessageAt: sql`greatest(${threads.lastMessageAt}, ${now})`, updatedAt: sql`greatest(${threads.updatedAt}, ${now})` })
        .where(eq(threads.id, id));
    },
    async find(organizationId, inboxId, id) {
      const [row] = await db.select().from(threads).where(and(eq(threads.organizationId, organizationId), eq(threads.inboxId, inboxId), eq(threads.id, id)));
      return row;
    },
    /** Newest activity first; the (time-ordered) id breaks ties. */
    async list(inboxId, page, per) {
      return db.select().from(threads).where(eq(threads.inboxId, inboxId)).orderBy(desc(threads.lastMessageAt), desc(threads.id)).limit(per).offset((page - 1) * per);
    },
    async count(inboxId) {
      return (await firstRow<{ n: number }>(db, sql`SELECT count(*)::int AS n FROM threads WHERE inbox_id = ${inboxId}`))!.n;
    },
    async listLabeled(inboxId, label, page, per) {
      return db
        .select()
        .from(threads)
        .where(inArray(threads.id, labeledThreadIds(inboxId, label)))
        .orderBy(desc(threads.lastMessageAt), desc(threads.id))
        .limit(per)
        .offset((page - 1) * per);
    },
    async countLabeled(inboxId, label) {
      return (await firstRow<{ n: number }>(db, sql`SELECT count(DISTINCT thread_id)::int AS n FROM message_labels WHERE inbox_id = ${inboxId} AND label = ${label}`))!.n;
    },
    /** In no particular order; a thread without messages (none has) is left out. */
    async overviews(threadIds) {
      if (threadIds.length === 0) return [];
      return rowsOf<ThreadOverviewRecord>(
        db,
        sql`SELECT ids.id AS "threadId", newest.from_address AS "from", newest.from_name AS "fromName", substr(newest.text, 1, ${PREVIEW_SOURCE_CHARS}) AS preview,
              (SELECT count(*)::int FROM messages WHERE thread_id = ids.id AND NOT read) AS "unreadCount",
              (SELECT count(*)::int FROM messages JOIN attachments ON attachments.message_id = messages.id WHERE messages.thread_id = ids.id AND NOT attachments.inline) AS "attachmentCount",
              (SELECT coalesce(jsonb_agg(DISTINCT label), '[]'::jsonb) FROM messages, jsonb_array_elements_text(messages.labels) AS label WHERE messages.thread_id = ids.id) AS labels
            FROM ${listOf(threadIds)} AS ids(id, position)
            JOIN LATERAL (SELECT from_address, from_name, text FROM messages WHERE thread_id = ids.id ORDER BY created_at DESC, id DESC LIMIT 1) AS newest ON true`,
      );
    },
  };
}
