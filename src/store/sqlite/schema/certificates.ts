import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import type { MtaStsPolicyRecord, TlsReportRecord } from "../../records";
import { timestamps } from "./columns";

export const acmeAccounts = sqliteTable("acme_accounts", {
  directoryUrl: text("directory_url").primaryKey(),
  email: text("email").notNull(),
  privateKeyPem: text("private_key_pem").notNull(),
  accountUrl: text("account_url"),
  ...timestamps,
});

export const tlsCertificates = sqliteTable("tls_certificates", {
  name: text("name").primaryKey(),
  certificatePem: text("certificate_pem"),
  privateKeyPem: text("private_key_pem"),
  notBefore: integer("not_before"),
  notAfter: integer("not_after"),
  failures: integer("failures").notNull().default(0),
  lastError: text("last_error"),
  nextAttemptAt: integer("next_attempt_at").notNull(),
  ...timestamps,
});

export const acmeChallenges = sqliteTable("acme_challenges", {
  token: text("token").primaryKey(),
  keyAuthorization: text("key_authorization").notNull(),
  expiresAt: integer("expires_at").notNull(),
});

export const mtaStsPolicies = sqliteTable("mta_sts_policies", {
  domain: text("domain").primaryKey(),
  policyId: text("policy_id").notNull(),
  mode: text("mode").$type<MtaStsPolicyRecord["mode"]>().notNull(),
  mxPatterns: text("mx_patterns", { mode: "json" }).$type<string[]>().notNull(),
  maxAge: integer("max_age").notNull(),
  fetchedAt: integer("fetched_at").notNull(),
  expiresAt: integer("expires_at").notNull(),
});

export const tlsReports = sqliteTable("tls_reports", {
  id: text("id").primaryKey(),
  reportId: text("report_id").notNull(),
  organizationName: text("organization_name").notNull(),
  policyDomain: text("policy_domain").notNull(),
  policyType: text("policy_type").notNull(),
  startAt: integer("start_at").notNull(),
  endAt: integer("end_at").notNull(),
  successfulSessions: integer("successful_sessions").notNull(),
  failedSessions: integer("failed_sessions").notNull(),
  failureDetails: text("failure_details", { mode: "json" }).$type<TlsReportRecord["failureDetails"]>().notNull(),
  receivedAt: integer("received_at").notNull(),
  contentDigest: text("content_digest"),
});
