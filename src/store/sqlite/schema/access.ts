import { sqliteTable, text } from "drizzle-orm/sqlite-core";
import type { AccessAction, AccessDirection } from "../../../access/rules";
import { timestamps } from "./columns";

export const accessRules = sqliteTable("access_rules", {
  id: text("id").primaryKey(),
  organizationId: text("organization_id").notNull(),
  inboxId: text("inbox_id"),
  direction: text("direction").$type<AccessDirection>().notNull(),
  action: text("action").$type<AccessAction>().notNull(),
  value: text("value").notNull(),
  ...timestamps,
});
