-- TLS reports (RFC 8460) that other senders' systems mail to our rua address: one row per report
-- and policy domain, with the session counts and the kinds of failure they saw.
CREATE TABLE tls_reports (
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
  UNIQUE (report_id, policy_domain)
);
CREATE INDEX tls_reports_domain ON tls_reports(policy_domain, start_at);
