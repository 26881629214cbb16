/** Fixed windows of the send rate limit (../sqlite/send-windows.ts), shared by every node: one UPSERT counts a send. */
import { and, eq, lt, sql } from "drizzle-orm";
import type { SendWindowsStore } from "../store";
import type { PgDb } from "./db";
import { sendWindows } from "./schema/index";

export function sendWindowsStore(db: PgDb): SendWindowsStore {
  return {
    async used(organizationId, windowStart) {
      const [row] = await db
        .select({ count: sendWindows.count })
        .from(sendWindows)
        .where(and(eq(sendWindows.organizationId, organizationId), eq(sendWindows.windowStart, windowStart)));
      return row?.count ?? 0;
    },
    /**
     * One statement, so two requests (on any nodes) never both take the last unit: the row lock of
     * ON CONFLICT makes the second wait for the first and then see its count.
     */
    async take(organizationId, windowStart, limit) {
      const [row] = await db
        .insert(sendWindows)
        .values({ organizationId, windowStart, count: 1 })
        .onConflictDoUpdate({ target: [sendWindows.organizationId, sendWindows.windowStart], set: { count: sql`${sendWindows.count} + 1` }, setWhere: sql`${sendWindows.count} < ${limit}` })
        .returning({ count: sendWindows.count });
      // The first send of a window: older windows of the organization are spent.
      if (row?.count === 1) await db.delete(sendWindows).where(and(eq(sendWindows.organizationId, organizationId), lt(sendWindows.windowStart, windowStart)));
      return row?.count;
    },
  };
}
