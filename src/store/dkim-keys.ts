/** DKIM key pairs per signing domain (the service domain and custom domains). */
import { and, asc, eq } from "drizzle-orm";
import { dkimKeys } from "../db/schema";
import type { Db } from "./db";

export type DkimKeyRow = typeof dkimKeys.$inferSelect;
export type DkimKeyStatus = DkimKeyRow["status"];

export const dkimKeysStore = (db: Db) => ({
  insert(rows: DkimKeyRow[]) {
    if (rows.length) db.insert(dkimKeys).values(rows).run();
  },
  /** Every key of a domain, oldest first: what its DNS must publish. */
  forDomain(domain: string): DkimKeyRow[] {
    return db.select().from(dkimKeys).where(eq(dkimKeys.domain, domain)).orderBy(asc(dkimKeys.createdAt), asc(dkimKeys.selector)).all();
  },
  /** The keys that sign mail from a domain now. */
  activeForDomain(domain: string): DkimKeyRow[] {
    return db.select().from(dkimKeys).where(and(eq(dkimKeys.domain, domain), eq(dkimKeys.status, "active"))).orderBy(asc(dkimKeys.algorithm)).all();
  },
  setStatus(id: string, status: DkimKeyStatus, now: number) {
    db.update(dkimKeys).set({ status, updatedAt: now }).where(eq(dkimKeys.id, id)).run();
  },
  remove(id: string) {
    db.delete(dkimKeys).where(eq(dkimKeys.id, id)).run();
  },
  removeForDomain(domain: string) {
    db.delete(dkimKeys).where(eq(dkimKeys.domain, domain)).run();
  },
});
