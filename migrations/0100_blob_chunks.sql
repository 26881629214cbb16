-- Large values (message sources and attachment contents over 256 KiB) are written in chunks,
-- each in a small transaction of its own, before the transaction that stores their message
-- (src/store/blobs.ts): one 20 MB insert would hold the server's event loop for a third of a
-- second. Such a row keeps an empty value and names its blob; rows of the same sent message and
-- its local copies share one. staged_blobs lists the blobs no row has claimed yet: after a crash
-- between the chunks and the message, the next start removes them.
CREATE TABLE blob_chunks (
  blob_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  bytes BLOB NOT NULL,
  PRIMARY KEY (blob_id, seq)
);
CREATE TABLE staged_blobs (
  blob_id TEXT PRIMARY KEY,
  created_at INTEGER NOT NULL
);
ALTER TABLE message_sources ADD COLUMN blob_id TEXT;
ALTER TABLE attachments ADD COLUMN blob_id TEXT;
CREATE INDEX message_sources_blob ON message_sources(blob_id) WHERE blob_id IS NOT NULL;
CREATE INDEX attachments_blob ON attachments(blob_id) WHERE blob_id IS NOT NULL;

-- A blob goes with the last row that names it (a message deleted alone, or with its inbox).
CREATE TRIGGER message_sources_blob_gone AFTER DELETE ON message_sources
WHEN OLD.blob_id IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM message_sources WHERE blob_id = OLD.blob_id)
  AND NOT EXISTS (SELECT 1 FROM attachments WHERE blob_id = OLD.blob_id)
BEGIN
  DELETE FROM blob_chunks WHERE blob_id = OLD.blob_id;
END;
CREATE TRIGGER attachments_blob_gone AFTER DELETE ON attachments
WHEN OLD.blob_id IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM message_sources WHERE blob_id = OLD.blob_id)
  AND NOT EXISTS (SELECT 1 FROM attachments WHERE blob_id = OLD.blob_id)
BEGIN
  DELETE FROM blob_chunks WHERE blob_id = OLD.blob_id;
END;
