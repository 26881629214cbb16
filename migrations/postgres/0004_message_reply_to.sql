-- The Reply-To addresses of a received message (RFC 5322 §3.6.2), as migrations/0210_message_reply_to.sql.
ALTER TABLE messages ADD COLUMN reply_to_addresses jsonb NOT NULL DEFAULT '[]';
