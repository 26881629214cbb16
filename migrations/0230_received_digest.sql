-- One copy per resend, not per Message-ID. A sender whose 250 was lost sends the same message
-- again, and the inbox keeps one copy; but two different messages can carry one Message-ID (a
-- sender that reuses ids, or a third party that sends first under an id it can predict), and the
-- second was acknowledged and dropped. A received message now keeps a digest of its envelope
-- sender, subject and body, and only a message with the same Message-ID and digest (or a copy
-- stored before this migration, which has none) is a resend. A column without a default: no
-- table rewrite; the look-up keeps the index on (inbox_id, message_id_header).
ALTER TABLE messages ADD COLUMN received_digest TEXT;
