/** Allow and block list entries per organization, some for one inbox only (migration 0160). */
import { and, count, desc, eq, isNull, or, sql, type SQL } from "drizzle-orm";
import type { AccessDirection } from "../../access/rules";
import type { AccessRuleFilter } from "../store";
import { accessRules } from "./schema/index";
import type { Db } from "./db";

export type AccessRuleRow = typeof accessRules.$inferSelect;

const filtered = (organizationId: string, filter: AccessRuleFilter): SQL | undefined =>
  and(
    eq(accessRules.organizationId, organizationId),
    filter.direction ? eq(accessRules.direction, filter.direction) : undefined,
    filter.action ? eq(accessRules.action, filter.action) : undefined,
    filter.inboxId === null ? isNull(accessRules.inboxId) : filter.inboxId ? eq(accessRules.inboxId, filter.inboxId) : undefined,
  );

export const accessRulesStore = (db: Db) => {
  // Asked at every RCPT of a received message and at every send: the organization's entries of
  // that direction and the inbox's own.
  const applying = db
    .select()
    .from(accessRules)
    .where(
      and(
        eq(accessRules.organizationId, sql.placeholder("organizationId")),
        eq(accessRules.direction, sql.placeholder("direction")),
        or(isNull(accessRules.inboxId), eq(accessRules.inboxId, sql.placeholder("inboxId"))),
      ),
    )
    .prepare();

  return {
    insert(row: AccessRuleRow) {
      db.insert(accessRules).values(row).run();
    },
    find(organizationId: string, id: string): AccessRuleRow | undefined {
      return db.select().from(accessRules).where(and(eq(accessRules.organizationId, organizationId), eq(accessRules.id, id))).get();
    },
    /** The entry with the same scope, direction, action and value, if there is one. */
    findSame(row: Pick<AccessRuleRow, "organizationId" | "inboxId" | "direction" | "action" | "value">): AccessRuleRow | undefined {
      return db
        .select()
        .from(accessRules)
        .where(and(filtered(row.organizationId, { direction: row.direction, action: row.action, inboxId: row.inboxId }), eq(accessRules.value, row.value)))
        .get();
    },
    /** The organization-wide entries of the direction and those of the inbox (none of an inbox with `inboxId` null). */
    applying(organizationId: string, inboxId: string | null, direction: AccessDirection): AccessRuleRow[] {
      return applying.all({ organizationId, direction, inboxId: inboxId ?? "" });
    },
    /** Newest first; rowid breaks ties within one millisecond. */
    list(organizationId: string, filter: AccessRuleFilter, page: number, per: number): AccessRuleRow[] {
      return db
        .select()
        .from(accessRules)
        .where(filtered(organizationId, filter))
        .orderBy(desc(accessRules.createdAt), desc(sql`rowid`))
        .limit(per)
        .offset((page - 1) * per)
        .all();
    },
    count(organizationId: string, filter: AccessRuleFilter): number {
      return db.select({ n: count() }).from(accessRules).where(filtered(organizationId, filter)).get()!.n;
    },
    delete(organizationId: string, id: string) {
      db.delete(accessRules).where(and(eq(accessRules.organizationId, organizationId), eq(accessRules.id, id))).run();
    },
  };
};
