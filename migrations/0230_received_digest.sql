-- One copy per resend, not per Message-ID. A sender whose 250 was lost sends the same message
-- again, and the inbox keeps one copy; but two different messages can carry one Message-ID (a
-- sender that reuses ids, or a third party that sends first under an id it can predict), and the
-- second was acknowledged and dropped. A received message now keeps a digest of its envelope
-- sender, subject and body, and only a message with the same Message-ID and digest (or a copy
-- stored before this migration, which has none) is a resend. The index takes the digest, so
-- that many messages under one Message-ID are told apart without reading their rows.
ALTER TABLE messages ADD COLUMN received_digest TEXT;
DROP INDEX messages_inbox_message_id;
CREATE INDEX messages_inbox_message_id ON messages(inbox_id, message_id_header, received_digest);
