import { boolean, pgTable, text } from "drizzle-orm/pg-core";
import { jsonb, millis, timestamps } from "./columns";
import type { DomainStatus, RecordCheck } from "../../../domains/status";
import { citext } from "./citext";

export const domains = pgTable("domains", {
  id: text("id").primaryKey(),
  organizationId: text("organization_id").notNull(),
  name: citext("name").notNull(),
  status: text("status").$type<DomainStatus>().notNull(),
  receiving: boolean("receiving").notNull(),
  sending: boolean("sending").notNull(),
  recordChecks: jsonb<Record<string, RecordCheck>>("record_checks").notNull(),
  verifiedAt: millis("verified_at"),
  recordsChangedAt: millis("records_changed_at").notNull(),
  checkedAt: millis("checked_at"),
  nextCheckAt: millis("next_check_at").notNull(),
  ...timestamps,
});
