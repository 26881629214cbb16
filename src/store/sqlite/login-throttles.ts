/** Login throttle rows, one per email or client address with recent attempts (see auth/login-throttle). */
import { eq, inArray, lte } from "drizzle-orm";
import { loginThrottles } from "./schema/index";
import type { Db } from "./db";

export type LoginThrottleRow = typeof loginThrottles.$inferSelect;

export const loginThrottlesStore = (db: Db) => ({
  find(subjects: string[]): LoginThrottleRow[] {
    return subjects.length ? db.select().from(loginThrottles).where(inArray(loginThrottles.subject, subjects)).all() : [];
  },
  save(row: LoginThrottleRow) {
    db.insert(loginThrottles).values(row).onConflictDoUpdate({ target: loginThrottles.subject, set: row }).run();
  },
  delete(subject: string) {
    db.delete(loginThrottles).where(eq(loginThrottles.subject, subject)).run();
  },
  /** Rows whose window and lock have both ended; keeps the table as small as the recent attempts. */
  prune(now: number) {
    db.delete(loginThrottles).where(lte(loginThrottles.expiresAt, now)).run();
  },
});
