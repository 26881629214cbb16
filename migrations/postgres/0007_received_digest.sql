-- The digest that tells a resend from another message with the same Message-ID, as
-- migrations/0230_received_digest.sql.
ALTER TABLE messages ADD COLUMN received_digest text;
DROP INDEX messages_inbox_message_id;
CREATE INDEX messages_inbox_message_id ON messages (inbox_id, message_id_header, received_digest);
