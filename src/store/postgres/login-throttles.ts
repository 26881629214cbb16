/** Login throttle rows (../sqlite/login-throttles.ts), shared by every node: a save is one UPSERT. */
import { eq, inArray, lte } from "drizzle-orm";
import type { LoginThrottlesStore } from "../store";
import { lockKeys, type PgDb } from "./db";
import { loginThrottles } from "./schema/index";

export function loginThrottlesStore(db: PgDb, inTransaction: boolean): LoginThrottlesStore {
  return {
    /** Holds the subjects until the transaction ends: the count read is the count saved (./db.ts lockKeys). */
    async find(subjects) {
      if (subjects.length === 0) return [];
      await lockKeys(db, inTransaction, subjects.map((subject) => `login_throttles:${subject}`));
      return db.select().from(loginThrottles).where(inArray(loginThrottles.subject, subjects));
    },
    async save(row) {
      await db.insert(loginThrottles).values(row).onConflictDoUpdate({ target: loginThrottles.subject, set: row });
    },
    async delete(subject) {
      await db.delete(loginThrottles).where(eq(loginThrottles.subject, subject));
    },
    async prune(now) {
      await db.delete(loginThrottles).where(lte(loginThrottles.expiresAt, now));
    },
  };
}
