/** Threads: a conversation in one inbox, with counters kept in step with its messages. */
import { and, desc, eq, inArray, sql } from "drizzle-orm";
import { messageLabels, threads } from "./schema/index";
import type { Db } from "./db";
import { placeholdersOf } from "../placeholders";
import { PREVIEW_SOURCE_CHARS, type ThreadOverviewRecord } from "../records";

export type ThreadRow = typeof threads.$inferSelect;


type StoredOverviewRow = Omit<ThreadOverviewRecord, "labels"> & { labels: string };

export const threadsStore = (db: Db) => {
  const byInbox = db
    .select()
    .from(threads)
    .where(eq(threads.inboxId, sql.placeholder("inboxId")))
    .orderBy(desc(threads.lastMessageAt), desc(sql`threads.rowid`))
    .limit(sql.placeholder("limit"))
    .offset(sql.placeholder("offset"))
    .prepare();
  const inInbox = db.$client.query<{ n: number }, { inboxId: string }>("SELECT count(*) AS n FROM threads WHERE inbox_id = $inboxId");
  // The threads of the label's rows in message_labels (migration 0150): as many as hold a labelled message, not the whole inbox.
  const labeledThreadIds = db
    .selectDistinct({ threadId: messageLabels.threadId })
    .from(messageLabels)
    .where(and(eq(messageLabels.inboxId, sql.placeholder("inboxId")), eq(messageLabels.label, sql.placeholder("label"))));
  const labeled = db
    .select()
    .from(threads)
    .where(inArray(threads.id, labeledThreadIds))
    .orderBy(desc(threads.lastMessageAt), desc(sql`threads.rowid`))
    .limit(sql.placeholder("limit"))
    .offset(sql.placeholder("offset"))
    .prepare();
  const labeledCount = db.$client.query<{ n: number }, { inboxId: string; label: string }>(
    "SELECT count(DISTINCT thread_id) AS n FROM message_labels WHERE inbox_id = $inboxId AND label = $label",
  );
  // One statement for a page of threads: the newest message by the messages_thread index, the
  // unread ones by the partial index of migration 0200, labels and attachments over the thread's messages.
  const overviews = db.$client.query<StoredOverviewRow, { threadIds: string }>(
    `SELECT ids.value AS threadId, newest.from_address AS "from", newest.from_name AS fromName, substr(newest.text, 1, ${PREVIEW_SOURCE_CHARS}) AS preview,
       (SELECT count(*) FROM messages WHERE thread_id = ids.value AND read = 0) AS unreadCount,
       (SELECT count(*) FROM messages JOIN attachments ON attachments.message_id = messages.id WHERE messages.thread_id = ids.value AND attachments.inline = 0) AS attachmentCount,
       (SELECT json_group_array(DISTINCT labels.value) FROM messages, json_each(messages.labels) AS labels WHERE messages.thread_id = ids.value) AS labels
     FROM json_each($threadIds) AS ids
     JOIN messages AS newest ON newest.rowid = (SELECT rowid FROM messages WHERE thread_id = ids.value ORDER BY created_at DESC, rowid DESC LIMIT 1)`,
  );
  const insert = db.insert(threads).values(placeholdersOf(threads)).prepare();
  const addMessage = db
    .update(threads)
    // A message dated before one already in the thread (a send composed while a reply arrived) never moves its activity back.
    .set({ messageCount: sql`${threads.messageCount} + 1`, lastMessageAt: sql`max(${threads.lastMessageAt}, ${sql.placeholder("now")})`, updatedAt: sql`max(${threads.updatedAt}, ${sql.placeholder("now")})` })
    .where(eq(threads.id, sql.placeholder("id")))
    .prepare();

  return {
    /** A new thread holding its first message. */
    insert(row: Omit<ThreadRow, "messageCount" | "lastMessageAt" | "updatedAt">): ThreadRow {
      const full = { ...row, messageCount: 1, lastMessageAt: row.createdAt, updatedAt: row.createdAt };
      insert.run(full);
      return full;
    },
    addMessage(id: string, now: number) {
      addMessage.run({ id, now });
    },
    find(organizationId: string, inboxId: string, id: string): ThreadRow | undefined {
      return db.select().from(threads).where(and(eq(threads.organizationId, organizationId), eq(threads.inboxId, inboxId), eq(threads.id, id))).get();
    },
    /** Newest activity first. */
    list(inboxId: string, page: number, per: number): ThreadRow[] {
      return byInbox.all({ inboxId, limit: per, offset: (page - 1) * per });
    },
    count(inboxId: string): number {
      return inInbox.get({ inboxId })!.n;
    },
    listLabeled(inboxId: string, label: string, page: number, per: number): ThreadRow[] {
      return labeled.all({ inboxId, label, limit: per, offset: (page - 1) * per });
    },
    countLabeled(inboxId: string, label: string): number {
      return labeledCount.get({ inboxId, label })!.n;
    },
    /** In no particular order; a thread without messages (none has) is left out. */
    overviews(threadIds: string[]): ThreadOverviewRecord[] {
      if (threadIds.length === 0) return [];
      return overviews.all({ threadIds: JSON.stringify(threadIds) }).map((row) => ({ ...row, labels: JSON.parse(row.labels) as string[] }));
    },
  };
};
