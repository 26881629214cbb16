-- The digest that tells a resend from another message with the same Message-ID, as
-- migrations/0230_received_digest.sql: a nullable column without a default, which PostgreSQL adds
-- without rewriting the table or rebuilding an index.
ALTER TABLE messages ADD COLUMN received_digest text;
