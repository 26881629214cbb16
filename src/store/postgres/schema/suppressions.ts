import { pgTable, text } from "drizzle-orm/pg-core";
import { timestamps } from "./columns";
import type { SuppressionReason } from "../../../outbound/policy";
import { citext } from "./citext";

export const suppressions = pgTable("suppressions", {
  id: text("id").primaryKey(),
  organizationId: text("organization_id").notNull(),
  address: citext("address").notNull(),
  reason: text("reason").$type<SuppressionReason>().notNull(),
  detail: text("detail"),
  messageId: text("message_id"),
  ...timestamps,
});
