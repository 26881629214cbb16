-- Inbound mail accepted but not analysed yet (src/smtp/inbound-queue.ts): the SMTP server commits
-- the raw message and its envelope here and answers 250; analysis workers then parse and
-- authenticate it, and one transaction stores its copies and deletes its row, so that a crash
-- in between leaves the row to be analysed again after the restart, never a copy twice. A
-- source over 256 KiB is staged as a blob first (0100_blob_chunks), which goes with its row.
CREATE TABLE accepted_inbound (
  id INTEGER PRIMARY KEY AUTOINCREMENT, -- acceptance order; never reused, so the queue's memory of a row cannot name another
  envelope TEXT NOT NULL,               -- JSON: transaction, peer, HELO, MAIL FROM, TLS, time, recipient inboxes
  raw BLOB NOT NULL,                    -- empty when blob_id names the staged source
  blob_id TEXT,
  size INTEGER NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,  -- analyses started, counted before each one
  next_attempt_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX accepted_inbound_due ON accepted_inbound(next_attempt_at);
