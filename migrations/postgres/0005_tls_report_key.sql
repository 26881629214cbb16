-- RFC 8460 §4.4, as migrations/0211_tls_report_key.sql: a report is kept once per (author,
-- report-id, domain, policy type). Its session counts are whatever the report says: a count over
-- 2^31 - 1 failed the insert, and the report's message was answered 451 for ever.
ALTER TABLE tls_reports DROP CONSTRAINT tls_reports_report_id_policy_domain_key;
ALTER TABLE tls_reports ADD CONSTRAINT tls_reports_author_report_policy_key UNIQUE (organization_name, report_id, policy_domain, policy_type);
ALTER TABLE tls_reports ALTER COLUMN successful_sessions TYPE BIGINT, ALTER COLUMN failed_sessions TYPE BIGINT;
