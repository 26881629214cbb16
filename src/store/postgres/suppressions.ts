/** Suppressed recipient addresses per organization (the address is citext), as ../sqlite/suppressions.ts. */
import { and, desc, eq, or, sql } from "drizzle-orm";
import type { SuppressionRecord } from "../records";
import type { SuppressionsStore } from "../store";
import { firstRow, type PgDb } from "./db";
import { suppressions } from "./schema/index";

export function suppressionsStore(db: PgDb): SuppressionsStore {
  return {
    async find(organizationId: string, address: string): Promise<SuppressionRecord | undefined> {
      const [row] = await db.select().from(suppressions).where(and(eq(suppressions.organizationId, organizationId), eq(suppressions.address, address)));
      return row;
    },
    /** One statement: nodes suppressing one address at once keep one row. */
    async upsert(row: SuppressionRecord): Promise<void> {
      await db
        .insert(suppressions)
        .values(row)
        .onConflictDoUpdate({
          target: [suppressions.organizationId, suppressions.address],
          set: { reason: row.reason, detail: row.detail, messageId: row.messageId, updatedAt: row.updatedAt },
        });
    },
    /** Newest first; ids (time-ordered) break ties within one millisecond. */
    async list(organizationId: string, page: number, per: number): Promise<SuppressionRecord[]> {
      return db
        .select()
        .from(suppressions)
        .where(eq(suppressions.organizationId, organizationId))
        .orderBy(desc(suppressions.createdAt), desc(suppressions.id))
        .limit(per)
        .offset((page - 1) * per);
    },
    async count(organizationId: string): Promise<number> {
      return (await firstRow<{ n: number }>(db, sql`SELECT count(*)::int AS n FROM suppressions WHERE organization_id = ${organizationId}`))!.n;
    },
    async findByIdOrAddress(organizationId: string, idOrAddress: string): Promise<SuppressionRecord | undefined> {
      const [row] = await db
        .select()
        .from(suppressions)
        .where(and(eq(suppressions.organizationId, organizationId), or(eq(suppressions.id, idOrAddress), eq(suppressions.address, idOrAddress))));
      return row;
    },
    async delete(organizationId: string, id: string): Promise<void> {
      await db.delete(suppressions).where(and(eq(suppressions.organizationId, organizationId), eq(suppressions.id, id)));
    },
  };
}
