-- Labels as an index: one row per label of a message, so that `?label=` on the message and thread
-- lists reads only the labelled messages (newest first, straight from the primary key) instead of
-- every message of the inbox. messages.labels (JSON) stays what the API shows; the triggers below
-- keep this table in step with it however a message is written, and a deleted message (or inbox)
-- takes its rows along by the foreign key.
CREATE TABLE message_labels (
  inbox_id TEXT NOT NULL,
  label TEXT NOT NULL,
  created_at INTEGER NOT NULL,          -- the message's, for the list's order
  message_id TEXT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
  thread_id TEXT NOT NULL,
  PRIMARY KEY (inbox_id, label, created_at, message_id)
) WITHOUT ROWID;
CREATE INDEX message_labels_message ON message_labels(message_id);
CREATE INDEX message_labels_thread ON message_labels(inbox_id, label, thread_id);

-- OR IGNORE: a label given twice is one row.
CREATE TRIGGER message_labels_insert AFTER INSERT ON messages WHEN new.labels <> '[]' BEGIN
  INSERT OR IGNORE INTO message_labels (inbox_id, label, created_at, message_id, thread_id)
  SELECT new.inbox_id, value, new.created_at, new.id, new.thread_id FROM json_each(new.labels);
END;

CREATE TRIGGER message_labels_update AFTER UPDATE OF labels ON messages BEGIN
  DELETE FROM message_labels WHERE message_id = old.id;
  INSERT OR IGNORE INTO message_labels (inbox_id, label, created_at, message_id, thread_id)
  SELECT new.inbox_id, value, new.created_at, new.id, new.thread_id FROM json_each(new.labels);
END;

INSERT OR IGNORE INTO message_labels (inbox_id, label, created_at, message_id, thread_id)
SELECT messages.inbox_id, labels.value, messages.created_at, messages.id, messages.thread_id
FROM messages, json_each(messages.labels) AS labels
WHERE messages.labels <> '[]';
