import { bigint, pgTable, text } from "drizzle-orm/pg-core";
import { jsonb, millis } from "./columns";
import type { TlsReportRecord } from "../../records";
import { citext } from "./citext";

export const tlsReports = pgTable("tls_reports", {
  id: text("id").primaryKey(),
  reportId: text("report_id").notNull(),
  organizationName: text("organization_name").notNull(),
  policyDomain: citext("policy_domain").notNull(),
  policyType: text("policy_type").notNull(),
  startAt: millis("start_at").notNull(),
  endAt: millis("end_at").notNull(),
  successfulSessions: bigint("successful_sessions", { mode: "number" }).notNull(),
  failedSessions: bigint("failed_sessions", { mode: "number" }).notNull(),
  failureDetails: jsonb<TlsReportRecord["failureDetails"]>("failure_details").notNull(),
  receivedAt: millis("received_at").notNull(),
  contentDigest: text("content_digest"),
});
