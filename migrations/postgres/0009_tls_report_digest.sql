-- As the embedded engine's 0240: a TLS report is kept once per author, report-id, domain, policy
-- type and content, so that a forged report under a provider's name and id cannot take the real
-- one's place. Rows from before have no digest (NULLs are distinct: never a resend).
ALTER TABLE tls_reports ADD COLUMN content_digest text;
ALTER TABLE tls_reports DROP CONSTRAINT tls_reports_author_report_policy_key;
ALTER TABLE tls_reports ADD CONSTRAINT tls_reports_author_report_content_key UNIQUE (organization_name, report_id, policy_domain, policy_type, content_digest);
