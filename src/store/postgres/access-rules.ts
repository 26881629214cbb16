/** Allow and block list entries per organization, some for one inbox only (../sqlite/access-rules.ts). */
import { and, count, desc, eq, isNull, or, sql, type SQL } from "drizzle-orm";
import type { AccessRuleFilter, AccessRulesStore } from "../store";
import { lockKeys, renderedOnce, type PgDb } from "./db";
import { accessRules } from "./schema/index";

/** What applies to an inbox: read twice for each received message (./db.ts: renderedOnce). */
const applyingTo = renderedOnce((db) =>
  db
    .select()
    .from(accessRules)
    .where(and(eq(accessRules.organizationId, sql.placeholder("organizationId")), eq(accessRules.direction, sql.placeholder("direction")), or(isNull(accessRules.inboxId), eq(accessRules.inboxId, sql.placeholder("inboxId"))))),
);

const filtered = (organizationId: string, filter: AccessRuleFilter): SQL | undefined =>
  and(
    eq(accessRules.organizationId, organizationId),
    filter.direction ? eq(accessRules.direction, filter.direction) : undefined,
    filter.action ? eq(accessRules.action, filter.action) : undefined,
    filter.inboxId === null ? isNull(accessRules.inboxId) : filter.inboxId ? eq(accessRules.inboxId, filter.inboxId) : undefined,
  );

/**
 * `inTransaction`: findSame takes the organization's rules until the commit, so that its check,
 * the count after it and the insert are one transaction's at a time, as on the embedded engine
 * (two nodes creating the same rule at once: a raw unique violation, a 500, for one of them; four
 * at the 999th: 1,003 rules).
 */
export function accessRulesStore(db: PgDb, inTransaction: boolean): AccessRulesStore {
  return {
    async insert(row) {
      await db.insert(accessRules).values(row);
    },
    async find(organizationId, id) {
      const [row] = await db.select().from(accessRules).where(and(eq(accessRules.organizationId, organizationId), eq(accessRules.id, id)));
      return row;
    },
    async findSame(row) {
      await lockKeys(db, inTransaction, [`access_rules:${row.organizationId}`]);
      const [same] = await db
        .select()
        .from(accessRules)
        .where(and(filtered(row.organizationId, { direction: row.direction, action: row.action, inboxId: row.inboxId }), eq(accessRules.value, row.value)));
      return same;
    },
    async applying(organizationId, inboxId, direction) {
      return applyingTo(db, { organizationId, direction, inboxId: inboxId ?? "" });
    },
    /** Newest first; the (time-ordered) id breaks ties within one millisecond. */
    async list(organizationId, filter, page, per) {
      return db.select().from(accessRules).where(filtered(organizationId, filter)).orderBy(desc(accessRules.createdAt), desc(accessRules.id)).limit(per).offset((page - 1) * per);
    },
    async count(organizationId, filter) {
      const [row] = await db.select({ n: count() }).from(accessRules).where(filtered(organizationId, filter));
      return row!.n;
    },
    async delete(organizationId, id) {
      await db.delete(accessRules).where(and(eq(accessRules.organizationId, organizationId), eq(accessRules.id, id)));
    },
  };
}
