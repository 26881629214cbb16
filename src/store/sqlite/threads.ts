/** Threads: a conversation in one inbox, with counters kept in step with its messages. */
import { and, desc, eq, sql } from "drizzle-orm";
import { threads } from "./schema/index";
import type { Db } from "./db";
import { placeholdersOf } from "./placeholders";

export type ThreadRow = typeof threads.$inferSelect;

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
  const insert = db.insert(threads).values(placeholdersOf(threads)).prepare();
  const addMessage = db
    .update(threads)
    .set({ messageCount: sql`${threads.messageCount} + 1`, lastMessageAt: sql`${sql.placeholder("now")}`, updatedAt: sql`${sql.placeholder("now")}` })
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
  };
};
