/** DKIM key pairs per signing domain, shared by every node so that each signs alike; as ../sqlite/dkim-keys.ts. */
import { and, asc, eq } from "drizzle-orm";
import type { DkimKeyStatus } from "../../dkim/keys";
import type { DkimKeyRecord } from "../records";
import type { SecretBox } from "../secret-box";
import type { DkimKeysStore } from "../store";
import type { PgDb } from "./db";
import { dkimKeys } from "./schema/index";

export function dkimKeysStore(db: PgDb, secrets: SecretBox): DkimKeysStore {
  const opened = (rows: DkimKeyRecord[]) => rows.map((row) => ({ ...row, privateKeyPem: secrets.open(row.privateKeyPem) }));
  return {
    async insert(rows: DkimKeyRecord[]): Promise<void> {
      if (rows.length) await db.insert(dkimKeys).values(rows.map((row) => ({ ...row, privateKeyPem: secrets.seal(row.privateKeyPem) })));
    },
    async forDomain(domain: string): Promise<DkimKeyRecord[]> {
      return opened(await db.select().from(dkimKeys).where(eq(dkimKeys.domain, domain)).orderBy(asc(dkimKeys.createdAt), asc(dkimKeys.selector)));
    },
    async activeForDomain(domain: string): Promise<DkimKeyRecord[]> {
      return opened(await db.select().from(dkimKeys).where(and(eq(dkimKeys.domain, domain), eq(dkimKeys.status, "active"))).orderBy(asc(dkimKeys.algorithm), asc(dkimKeys.id)));
    },
    /** Sorted here, as JavaScript compares strings (the database's collation might not). */
    async activeIdsForDomain(domain: string): Promise<string[]> {
      const rows = await db.select({ id: dkimKeys.id }).from(dkimKeys).where(and(eq(dkimKeys.domain, domain), eq(dkimKeys.status, "active")));
      return rows.map((row) => row.id).sort();
    },
    async setStatus(id: string, status: DkimKeyStatus, now: number): Promise<void> {
      await db.update(dkimKeys).set({ status, updatedAt: now }).where(eq(dkimKeys.id, id));
    },
    async remove(id: string): Promise<void> {
      await db.delete(dkimKeys).where(eq(dkimKeys.id, id));
    },
    async removeForDomain(domain: string): Promise<void> {
      await db.delete(dkimKeys).where(eq(dkimKeys.domain, domain));
    },
  };
}
