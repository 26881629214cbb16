/** Custom domains: every tenant-facing query takes the organization; look-ups by name for mail routing do not. */
import { and, asc, desc, eq, like, lte, or, sql } from "drizzle-orm";
import { domains, inboxes } from "./schema/index";
import type { Db } from "./db";
import type { InboxRow } from "./inboxes";
import type { DomainChanges } from "../store";

export type DomainRow = typeof domains.$inferSelect;

export const domainsStore = (db: Db) => {
  // Prepared once: SMTP asks it at every RCPT to an address on a domain other than the service's.
  const byName = db.select().from(domains).where(eq(domains.name, sql.placeholder("name"))).prepare();
  const inOrganization = db.$client.query<{ n: number }, { organizationId: string }>("SELECT count(*) AS n FROM domains WHERE organization_id = $organizationId");
  return {
    insert(row: DomainRow) {
      db.insert(domains).values(row).run();
    },
    /** `idOrName`: the identifier or the (ASCII, any case) name, as `{domainId}` in paths accepts both. */
    find(organizationId: string, idOrName: string): DomainRow | undefined {
      return db.select().from(domains).where(and(eq(domains.organizationId, organizationId), or(eq(domains.id, idOrName), eq(domains.name, idOrName)))).get();
    },
    /** Across organizations: a name is claimed by one organization only. */
    findByName(name: string): DomainRow | undefined {
      return byName.get({ name });
    },
    findById(id: string): DomainRow | undefined {
      return db.select().from(domains).where(eq(domains.id, id)).get();
    },
    /** Newest first; rowid breaks ties between domains added in the same millisecond. */
    list(organizationId: string, page: number, per: number): DomainRow[] {
      return db.select().from(domains).where(eq(domains.organizationId, organizationId)).orderBy(desc(domains.createdAt), desc(sql`rowid`)).limit(per).offset((page - 1) * per).all();
    },
    count(organizationId: string): number {
      return inOrganization.get({ organizationId })!.n;
    },
    receivingNames(): string[] {
      return db.select({ name: domains.name }).from(domains).where(eq(domains.receiving, true)).orderBy(asc(domains.name)).all().map((row) => row.name);
    },
    /** Domains whose background check is due, most overdue first. */
    due(now: number, limit: number): DomainRow[] {
      return db.select().from(domains).where(lte(domains.nextCheckAt, now)).orderBy(asc(domains.nextCheckAt)).limit(limit).all();
    },
    update(id: string, changes: DomainChanges) {
      db.update(domains).set(changes).where(eq(domains.id, id)).run();
    },
    /** Its DKIM keys go with it (trigger of migration 0080). */
    delete(id: string) {
      db.delete(domains).where(eq(domains.id, id)).run();
    },
    /** The organization's inboxes with an address on the domain (names are LDH only: no LIKE wildcards in them). */
    inboxesOnDomain(organizationId: string, name: string): InboxRow[] {
      return db.select().from(inboxes).where(and(eq(inboxes.organizationId, organizationId), like(inboxes.email, `%@${name}`))).orderBy(asc(inboxes.createdAt)).all();
    },
  };
};
