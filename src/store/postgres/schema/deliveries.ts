import { integer, pgTable, text } from "drizzle-orm/pg-core";
import { millis, timestamps } from "./columns";

export const deliveries = pgTable("deliveries", {
  id: text("id").primaryKey(),
  organizationId: text("organization_id").notNull(),
  messageId: text("message_id").notNull(),
  recipient: text("recipient").notNull(),
  domain: text("domain").notNull(),
  status: text("status").notNull(),
  attempts: integer("attempts").notNull(),
  lastResponse: text("last_response"),
  nextAttemptAt: millis("next_attempt_at"),
  /** The node run whose claim holds the row, and until when (../leases.ts); null when no try is under way. */
  claimedBy: text("claimed_by"),
  leaseUntil: millis("lease_until"),
  ...timestamps,
});
