-- A TLS report is kept once per (author, report-id, domain, policy type) and content: the author
-- and the id are what the sender writes, so keyed on them alone, a forged report sent first under
-- a provider's name and predictable id took the place of the real one, which was then dropped
-- (its failures with it). The same report sent again (RFC 8460 §5.3) has the same content and is
-- kept once; rows from before have none, and are never taken for another report's resend.
CREATE TABLE tls_reports_digested (
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
  content_digest TEXT,
  UNIQUE (organization_name, report_id, policy_domain, policy_type, content_digest)
);
INSERT INTO tls_reports_digested (id, report_id, organization_name, policy_domain, policy_type, start_at, end_at, successful_sessions, failed_sessions, failure_details, received_at)
  SELECT id, report_id, organization_name, policy_domain, policy_type, start_at, end_at, successful_sessions, failed_sessions, failure_details, received_at FROM tls_reports;
DROP TABLE tls_reports;
ALTER TABLE tls_reports_digested RENAME TO tls_reports;
CREATE INDEX tls_reports_domain ON tls_reports(policy_domain, start_at);
