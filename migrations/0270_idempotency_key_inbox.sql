-- The inbox an idempotent request named in its path (send, reply, forward, draft send): its kept
-- response (a message, attachment content included) goes with the inbox, as the inbox's messages do.
ALTER TABLE idempotency_keys ADD COLUMN inbox_id TEXT;
CREATE INDEX idempotency_keys_inbox ON idempotency_keys(inbox_id) WHERE inbox_id IS NOT NULL;
