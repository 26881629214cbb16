import { pgTable, text } from "drizzle-orm/pg-core";
import { millis } from "./columns";

export const nodes = pgTable("nodes", {
  name: text("name").primaryKey(),
  mailDomain: text("mail_domain").notNull(),
  seenAt: millis("seen_at").notNull(),
});
