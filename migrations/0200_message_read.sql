-- Read or unread, per message (the console's unread state; PATCH .../messages/{id} sets it).
-- Received mail starts unread and sent mail read (src/messages/receive.ts, send.ts); messages stored
-- before this migration count as read, so that an upgrade does not mark a whole mailbox unread.
ALTER TABLE messages ADD COLUMN read INTEGER NOT NULL DEFAULT 1;

-- Unread messages only: what an inbox's and a thread's unread counts read, whatever the mailbox's size.
CREATE INDEX messages_unread_inbox ON messages(inbox_id) WHERE read = 0;
CREATE INDEX messages_unread_thread ON messages(thread_id) WHERE read = 0;
