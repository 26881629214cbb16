-- The full-text index (0040) is written once per transaction instead of once per message. FTS5
-- keeps new entries in memory and writes them out as a new index segment whenever a statement
-- with a statement journal starts, which every message's own statements do: indexing row by row
-- from the insert trigger wrote one segment per message (and merged them), twice the cost of
-- indexing the same messages with one statement. So a new message only notes its rowid here, and
-- the store (store/search-index.ts) indexes the noted messages with one statement just before each
-- transaction commits: outside a transaction this table is always empty, and search sees every
-- committed message, as before.
-- After a 'rebuild' of messages_fts, which indexes every message, run: DELETE FROM messages_fts_pending;
CREATE TABLE messages_fts_pending (
  message_rowid INTEGER PRIMARY KEY
);

DROP TRIGGER messages_fts_insert;
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
  INSERT INTO messages_fts_pending (message_rowid) VALUES (new.rowid);
END;

-- A message still waiting is not in the index: removing it from the index would corrupt it.
DROP TRIGGER messages_fts_delete;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
  INSERT INTO messages_fts (messages_fts, rowid, subject, text, from_address)
  SELECT 'delete', old.rowid, old.subject, old.text, old.from_address
  WHERE NOT EXISTS (SELECT 1 FROM messages_fts_pending WHERE message_rowid = old.rowid);
  DELETE FROM messages_fts_pending WHERE message_rowid = old.rowid;
END;

-- A message still waiting is indexed with its values at the time of the commit.
DROP TRIGGER messages_fts_update;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF subject, text, from_address ON messages
WHEN NOT EXISTS (SELECT 1 FROM messages_fts_pending WHERE message_rowid = old.rowid)
BEGIN
  INSERT INTO messages_fts (messages_fts, rowid, subject, text, from_address) VALUES ('delete', old.rowid, old.subject, old.text, old.from_address);
  INSERT INTO messages_fts (rowid, subject, text, from_address) VALUES (new.rowid, new.subject, new.text, new.from_address);
END;
