-- RFC 8460 §4.4: a report-id is unique per report author only, and one report may describe a
-- domain under several policies (sts and tlsa). Kept once per (author, report-id, domain, policy
-- type): by (report-id, domain) alone, a second author's report with a common id (the
-- `<date>_<domain>` form) and a report's tlsa entry were dropped, and a forged report could take a
-- large provider's predictable id first. SQLite changes a table's constraints by copying it.
CREATE TABLE tls_reports_keyed (
  id TEXT PRIMARY KEY,
  report_id TEXT NOT NULL,
  organization_name TEXT NOT NULL,
  policy_domain TEXT NOT NULL COLLATE NOCASE,
  policy_type TEXT NOT NULL,
  start_at INTEGER NOT NULL,
  end_at INTEGER NOT NULL,
  successful_sessions INTEGER NOT NULL,
  failed_sessions INTEGER NOT NULL,
  failure_details TEXT NOT NULL,
  received_at INTEGER NOT NULL,
  UNIQUE (organization_name, report_id, policy_domain, policy_type)
);
INSERT INTO tls_reports_keyed (id, report_id, organization_name, policy_domain, policy_type, start_at, end_at, successful_sessions, failed_sessions, failure_details, received_at)
  SELECT id, report_id, organization_name, policy_domain, policy_type, start_at, end_at, successful_sessions, failed_sessions, failure_details, received_at FROM tls_reports;
DROP TABLE tls_reports;
ALTER TABLE tls_reports_keyed RENAME TO tls_reports;
CREATE INDEX tls_reports_domain ON tls_reports(policy_domain, start_at);
