/** DKIM key pairs per signing domain (the service domain and custom domains). */
import { and, asc, eq } from "drizzle-orm";
import type { DkimKeyStatus } from "../../dkim/keys";
import { dkimKeys } from "./schema/index";
import type { Db } from "./db";
import type { SecretBox } from "../secret-box";

export type DkimKeyRow = typeof dkimKeys.$inferSelect;

export const dkimKeysStore = (db: Db, secrets: SecretBox) => {
  const opened = (rows: DkimKeyRow[]) => rows.map((row) => ({ ...row, privateKeyPem: secrets.open(row.privateKeyPem) }));
  // Asked for every outgoing message (outbound/signing.ts): prepared once, and the ids alone are
  // cheap to compare with the keys the signer holds, without reading the private keys again (and
  // sorted here rather than by an ORDER BY: see row-reader.ts).
  const activeIds = db.$client.query<{ id: string }, [string]>("SELECT id FROM dkim_keys WHERE domain = ?1 AND status = 'active'");
  return {
    insert(rows: DkimKeyRow[]) {
      if (rows.length) db.insert(dkimKeys).values(rows.map((row) => ({ ...row, privateKeyPem: secrets.seal(row.privateKeyPem) }))).run();
    },
    /** Every key of a domain, oldest first: what its DNS must publish. */
    forDomain(domain: string): DkimKeyRow[] {
      return opened(db.select().from(dkimKeys).where(eq(dkimKeys.domain, domain)).orderBy(asc(dkimKeys.createdAt), asc(dkimKeys.selector)).all());
    },
    /** The keys that sign mail from a domain now. */
    activeForDomain(domain: string): DkimKeyRow[] {
      return opened(db.select().from(dkimKeys).where(and(eq(dkimKeys.domain, domain), eq(dkimKeys.status, "active"))).orderBy(asc(dkimKeys.algorithm), asc(dkimKeys.id)).all());
    },
    /** The ids of activeForDomain, sorted. */
    activeIdsForDomain(domain: string): string[] {
      return activeIds
        .all(domain)
        .map((row) => row.id)
        .sort();
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
  };
};
