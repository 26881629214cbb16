import { integer, pgTable, text } from "drizzle-orm/pg-core";
import { jsonb, millis } from "./columns";
import type { MtaStsPolicyRecord } from "../../records";
import { citext } from "./citext";

export const mtaStsPolicies = pgTable("mta_sts_policies", {
  domain: citext("domain").primaryKey(),
  policyId: text("policy_id").notNull(),
  mode: text("mode").$type<MtaStsPolicyRecord["mode"]>().notNull(),
  mxPatterns: jsonb<string[]>("mx_patterns").notNull(),
  maxAge: integer("max_age").notNull(),
  fetchedAt: millis("fetched_at").notNull(),
  expiresAt: millis("expires_at").notNull(),
});
