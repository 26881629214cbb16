-- The search index (0040, 0050) holds the first 65,536 characters of each message's text (the
-- subject and sender whole). FTS5 reads every position of a token in each candidate row: one
-- 8 MB text made a phrase search of any inbox whose window held it take 8 s of the event loop,
-- and indexing it 5 s. Capped, a row costs a search a few milliseconds at most; the text past the
-- cap is not found by the index (docs/api.md, "Search"). The index's writes (store/sqlite/
-- search-index.ts) and the triggers below give FTS5 the same capped text, as an external-content
-- table requires for its deletes. So FTS5's 'integrity-check' with rank 1, which compares the index
-- with the whole texts, reports the long ones (rank 0 checks the index itself); and a 'rebuild'
-- would index whole texts: index again instead, with
-- INSERT INTO messages_fts (messages_fts) VALUES ('delete-all'); INSERT INTO messages_fts_pending SELECT rowid FROM messages;
DROP TRIGGER messages_fts_delete;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
  INSERT INTO messages_fts (messages_fts, rowid, subject, text, from_address)
  SELECT 'delete', old.rowid, old.subject, substr(old.text, 1, 65536), old.from_address
  WHERE NOT EXISTS (SELECT 1 FROM messages_fts_pending WHERE message_rowid = old.rowid);
  DELETE FROM messages_fts_pending WHERE message_rowid = old.rowid;
END;
DROP TRIGGER messages_fts_update;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF subject, text, from_address ON messages
WHEN NOT EXISTS (SELECT 1 FROM messages_fts_pending WHERE message_rowid = old.rowid)
BEGIN
  INSERT INTO messages_fts (messages_fts, rowid, subject, text, from_address) VALUES ('delete', old.rowid, old.subject, substr(old.text, 1, 65536), old.from_address);
  INSERT INTO messages_fts (rowid, subject, text, from_address) VALUES (new.rowid, new.subject, substr(new.text, 1, 65536), new.from_address);
END;
-- Longer texts indexed whole before: taken out with what they were indexed with, put back capped
-- (octet_length reads the row's header only; a text of more characters has at least as many bytes).
CREATE TEMP TABLE long_texts AS
  SELECT rowid FROM messages
  WHERE octet_length(text) > 65536 AND length(text) > 65536
    AND rowid NOT IN (SELECT message_rowid FROM messages_fts_pending);
INSERT INTO messages_fts (messages_fts, rowid, subject, text, from_address)
  SELECT 'delete', rowid, subject, text, from_address FROM messages WHERE rowid IN (SELECT rowid FROM long_texts);
INSERT INTO messages_fts (rowid, subject, text, from_address)
  SELECT rowid, subject, substr(text, 1, 65536), from_address FROM messages WHERE rowid IN (SELECT rowid FROM long_texts);
DROP TABLE long_texts;
