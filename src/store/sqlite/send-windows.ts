/** Fixed windows of the send rate limit: one counter row per organization and window start. */
import { and, eq, lt, sql } from "drizzle-orm";
import { sendWindows } from "./schema/index";
import type { Db } from "./db";

export const sendWindowsStore = (db: Db) => {
  const take = db
    .insert(sendWindows)
    .values({ organizationId: sql.placeholder("organizationId"), windowStart: sql.placeholder("windowStart"), count: 1 })
    .onConflictDoUpdate({
      target: [sendWindows.organizationId, sendWindows.windowStart],
      set: { count: sql`${sendWindows.count} + 1` },
      setWhere: sql`${sendWindows.count} < ${sql.placeholder("limit")}`,
    })
    .returning({ count: sendWindows.count })
    .prepare();
  const used = db
    .select({ count: sendWindows.count })
    .from(sendWindows)
    .where(and(eq(sendWindows.organizationId, sql.placeholder("organizationId")), eq(sendWindows.windowStart, sql.placeholder("windowStart"))))
    .prepare();

  return {
    /** Sends counted so far in the window. */
    used(organizationId: string, windowStart: number): number {
      return used.get({ organizationId, windowStart })?.count ?? 0;
    },
    /**
     * Counts one send if the window has room: the new count, or undefined when it is full. One
     * statement, so two requests can never both take the last unit.
     */
    take(organizationId: string, windowStart: number, limit: number): number | undefined {
      const count = take.get({ organizationId, windowStart, limit })?.count;
      // The first send of a window: older windows of the organization are spent.
      if (count === 1) db.delete(sendWindows).where(and(eq(sendWindows.organizationId, organizationId), lt(sendWindows.windowStart, windowStart))).run();
      return count;
    },
  };
};
