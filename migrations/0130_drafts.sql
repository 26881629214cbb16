-- Drafts: messages composed ahead of sending, each field optional until it is sent. A draft with
-- send_at is scheduled: the drafts queue claims it once next_attempt_at falls due (status
-- sending), sends it, and marks it sent in the transaction that stores the message. A draft goes
-- with its inbox (deleting the inbox cancels its scheduled sends).
CREATE TABLE drafts (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  inbox_id TEXT NOT NULL REFERENCES inboxes(id) ON DELETE CASCADE,
  thread_id TEXT,                         -- a reply draft's thread, set when it is created
  in_reply_to_message_id TEXT,            -- the message of the inbox it answers
  to_addresses TEXT NOT NULL,             -- JSON arrays, as messages keep them
  cc_addresses TEXT NOT NULL,
  bcc_addresses TEXT NOT NULL,
  subject TEXT,
  text TEXT,
  html TEXT,
  labels TEXT NOT NULL,
  send_at INTEGER,
  status TEXT NOT NULL,                   -- draft, scheduled, sending, sent or failed
  message_id TEXT,                        -- the sent message
  failure_reason TEXT,
  attempts INTEGER NOT NULL,              -- scheduled tries made (a rate-limited one is tried again)
  next_attempt_at INTEGER,                -- when the queue sends it; set only while scheduled or sending
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX drafts_inbox ON drafts(inbox_id, created_at);
CREATE INDEX drafts_due ON drafts(next_attempt_at) WHERE next_attempt_at IS NOT NULL;

-- A draft's attachments, decoded; a large one is staged in blob_chunks (migrations/0100) and
-- named by blob_id, which no other row shares.
CREATE TABLE draft_attachments (
  draft_id TEXT NOT NULL REFERENCES drafts(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  name TEXT,
  content_type TEXT NOT NULL,
  size INTEGER NOT NULL,
  content BLOB NOT NULL,
  blob_id TEXT,
  PRIMARY KEY (draft_id, position)
);
CREATE TRIGGER draft_attachments_blob_gone AFTER DELETE ON draft_attachments
WHEN OLD.blob_id IS NOT NULL
BEGIN
  DELETE FROM blob_chunks WHERE blob_id = OLD.blob_id;
END;
