import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import type { DomainStatus, RecordCheck } from "../../../domains/status";
import { timestamps } from "./columns";

export const domains = sqliteTable("domains", {
  id: text("id").primaryKey(),
  organizationId: text("organization_id").notNull(),
  name: text("name").notNull(),
  status: text("status").$type<DomainStatus>().notNull(),
  receiving: integer("receiving", { mode: "boolean" }).notNull(),
  sending: integer("sending", { mode: "boolean" }).notNull(),
  recordChecks: text("record_checks", { mode: "json" }).$type<Record<string, RecordCheck>>().notNull(),
  verifiedAt: integer("verified_at"),
  recordsChangedAt: integer("records_changed_at").notNull(),
  checkedAt: integer("checked_at"),
  nextCheckAt: integer("next_check_at").notNull(),
  ...timestamps,
});
