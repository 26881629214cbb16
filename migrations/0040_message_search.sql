-- Full-text index of messages for `query` on the message list: subject, text and sender.
-- The trigram tokenizer indexes every 3-character substring, so a word or phrase matches anywhere
-- in a field (not only at word starts), case-insensitively (its folding agrees with RE2's simple
-- case folding: K/k/U+212A, s/S/U+017F, ...); the same index picks the candidates of a regular
-- expression that contains a literal of 3+ characters.
-- External content: the text lives once, in messages; the index refers to messages' rowid and the
-- triggers below keep it in step (cascading deletes fire them too). messages has no INTEGER
-- PRIMARY KEY: SQLite documents that VACUUM may renumber such rowids (3.54 keeps them). After
-- anything that rebuilds the messages table, run: INSERT INTO messages_fts(messages_fts) VALUES ('rebuild');
CREATE VIRTUAL TABLE messages_fts USING fts5(
  subject, text, from_address,
  content = 'messages', content_rowid = 'rowid',
  tokenize = 'trigram case_sensitive 0'
);

CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
  INSERT INTO messages_fts (rowid, subject, text, from_address) VALUES (new.rowid, new.subject, new.text, new.from_address);
END;

CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
  INSERT INTO messages_fts (messages_fts, rowid, subject, text, from_address) VALUES ('delete', old.rowid, old.subject, old.text, old.from_address);
END;

CREATE TRIGGER messages_fts_update AFTER UPDATE OF subject, text, from_address ON messages BEGIN
  INSERT INTO messages_fts (messages_fts, rowid, subject, text, from_address) VALUES ('delete', old.rowid, old.subject, old.text, old.from_address);
  INSERT INTO messages_fts (rowid, subject, text, from_address) VALUES (new.rowid, new.subject, new.text, new.from_address);
END;
