import { sqliteTable, text } from "drizzle-orm/sqlite-core";
import type { SuppressionReason } from "../../../outbound/policy";
import { timestamps } from "./columns";

export const suppressions = sqliteTable("suppressions", {
  id: text("id").primaryKey(),
  organizationId: text("organization_id").notNull(),
  address: text("address").notNull(),
  reason: text("reason").$type<SuppressionReason>().notNull(),
  detail: text("detail"),
  messageId: text("message_id"),
  ...timestamps,
});
