/** Suppressed recipient addresses per organization (the address column is `COLLATE NOCASE`). */
import { and, desc, eq, or, sql } from "drizzle-orm";
import { suppressions } from "./schema/index";
import type { Db } from "./db";

export type SuppressionRow = typeof suppressions.$inferSelect;

export const suppressionsStore = (db: Db) => {
  const byAddress = db
    .select()
    .from(suppressions)
    .where(and(eq(suppressions.organizationId, sql.placeholder("organizationId")), eq(suppressions.address, sql.placeholder("address"))))
    .prepare();
  const inOrganization = db.$client.query<{ n: number }, { organizationId: string }>("SELECT count(*) AS n FROM suppressions WHERE organization_id = $organizationId");

  return {
    find(organizationId: string, address: string): SuppressionRow | undefined {
      return byAddress.get({ organizationId, address });
    },
    /** A first suppression of an address is kept; a later one only refreshes its reason and detail. */
    upsert(row: SuppressionRow) {
      db.insert(suppressions)
        .values(row)
        .onConflictDoUpdate({
          target: [suppressions.organizationId, suppressions.address],
          set: { reason: row.reason, detail: row.detail, messageId: row.messageId, updatedAt: row.updatedAt },
        })
        .run();
    },
    /** Newest first; rowid breaks ties within one millisecond. */
    list(organizationId: string, page: number, per: number): SuppressionRow[] {
      return db
        .select()
        .from(suppressions)
        .where(eq(suppressions.organizationId, organizationId))
        .orderBy(desc(suppressions.createdAt), desc(sql`rowid`))
        .limit(per)
        .offset((page - 1) * per)
        .all();
    },
    count(organizationId: string): number {
      return inOrganization.get({ organizationId })!.n;
    },
    /** By its id or by the address itself. */
    findByIdOrAddress(organizationId: string, idOrAddress: string): SuppressionRow | undefined {
      return db
        .select()
        .from(suppressions)
        .where(and(eq(suppressions.organizationId, organizationId), or(eq(suppressions.id, idOrAddress), eq(suppressions.address, idOrAddress))))
        .get();
    },
    delete(organizationId: string, id: string) {
      db.delete(suppressions).where(and(eq(suppressions.organizationId, organizationId), eq(suppressions.id, id))).run();
    },
  };
};
