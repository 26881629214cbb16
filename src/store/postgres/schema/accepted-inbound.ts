import { bigint, integer, pgTable, text } from "drizzle-orm/pg-core";
import { bytea, jsonb, millis } from "./columns";
import type { InboundEnvelope } from "../../store";

export const acceptedInbound = pgTable("accepted_inbound", {
  id: bigint("id", { mode: "number" }).primaryKey().generatedByDefaultAsIdentity(),
  envelope: jsonb<InboundEnvelope>("envelope").notNull(),
  raw: bytea("raw").notNull(),
  blobId: text("blob_id"),
  size: integer("size").notNull(),
  attempts: integer("attempts").notNull(),
  nextAttemptAt: millis("next_attempt_at").notNull(),
  /** The node run whose claim holds the row, and until when (../leases.ts); null when no try is under way. */
  claimedBy: text("claimed_by"),
  leaseUntil: millis("lease_until"),
  createdAt: millis("created_at").notNull(),
  /** The client's peer group (src/net/peer-group.ts): the inbound queue's share per peer. */
  peer: text("peer").notNull(),
});
