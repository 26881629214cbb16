/**
 * Custom domains, as ../sqlite/domains.ts: every tenant-facing query takes the organization;
 * look-ups by name for mail routing do not. The background check claims due domains with
 * FOR UPDATE SKIP LOCKED, so that two nodes never check one domain at once.
 */
import { and, asc, desc, eq, lte, or, sql } from "drizzle-orm";
import type { DomainRecord, InboxRecord } from "../records";
import type { DomainChanges, DomainsStore } from "../store";
import { firstRow, lockKeys, type PgDb } from "./db";
import { domains, inboxes } from "./schema/index";

/**
 * `inTransaction`: findByName takes the name until the commit, so that a claim's check and its
 * insert are one transaction's at a time, as on the embedded engine (two nodes adding one name
 * at once: a raw unique violation, a 500 instead of 409, for one of them). Each find locks the
 * row it reads until the commit (../store.ts, DomainsStore): without, two rotations picked the
 * same selectors, and an inbox was created on a domain deleted meanwhile.
 */
export function domainsStore(db: PgDb, inTransaction: boolean): DomainsStore {
  const selectDomains = () => db.select().from(domains).$dynamic();
  const held = async (query: ReturnType<typeof selectDomains>) => (inTransaction ? await query.for("no key update") : await query)[0];
  return {
    async insert(row: DomainRecord): Promise<void> {
      await db.insert(domains).values(row);
    },
    async find(organizationId: string, idOrName: string): Promise<DomainRecord | undefined> {
      return held(selectDomains().where(and(eq(domains.organizationId, organizationId), or(eq(domains.id, idOrName), eq(domains.name, idOrName)))));
    },
    async findByName(name: string): Promise<DomainRecord | undefined> {
      await lockKeys(db, inTransaction, [`domains:${name.toLowerCase()}`]);
      return held(selectDomains().where(eq(domains.name, name)));
    },
    async findById(id: string): Promise<DomainRecord | undefined> {
      return held(selectDomains().where(eq(domains.id, id)));
    },
    /** Newest first; ids (time-ordered) break ties within one millisecond. */
    async list(organizationId: string, page: number, per: number): Promise<DomainRecord[]> {
      return db.select().from(domains).where(eq(domains.organizationId, organizationId)).orderBy(desc(domains.createdAt), desc(domains.id)).limit(per).offset((page - 1) * per);
    },
    async count(organizationId: string): Promise<number> {
      return (await firstRow<{ n: number }>(db, sql`SELECT count(*)::int AS n FROM domains WHERE organization_id = ${organizationId}`))!.n;
    },
    async receivingNames(): Promise<string[]> {
      const rows = await db.select({ name: domains.name }).from(domains).where(eq(domains.receiving, true)).orderBy(asc(domains.name));
      return rows.map((row) => row.name);
    },
    /** Locked as read: the caller moves their next check on in the same transaction, and other nodes pass them over meanwhile. */
    async due(now: number, limit: number): Promise<DomainRecord[]> {
      return db.select().from(domains).where(lte(domains.nextCheckAt, now)).orderBy(asc(domains.nextCheckAt)).limit(limit).for("update", { skipLocked: true });
    },
    async update(id: string, changes: DomainChanges): Promise<void> {
      await db.update(domains).set(changes).where(eq(domains.id, id));
    },
    /** Its DKIM keys go with it (trigger of migrations/postgres/0002_delivery.sql). */
    async delete(id: string): Promise<void> {
      await db.delete(domains).where(eq(domains.id, id));
    },
    /** The organization's inboxes with an address on the domain (names are LDH only: no LIKE wildcards in them). */
    async inboxesOnDomain(organizationId: string, name: string): Promise<InboxRecord[]> {
      return db
        .select()
        .from(inboxes)
        .where(and(eq(inboxes.organizationId, organizationId), sql`lower(${inboxes.email}) LIKE ${`%@${name.toLowerCase()}`}`))
        .orderBy(asc(inboxes.createdAt), asc(inboxes.id));
    },
  };
}
