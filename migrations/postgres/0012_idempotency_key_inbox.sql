-- As migrations/0270_idempotency_key_inbox.sql: a kept response goes with the inbox its request named.
ALTER TABLE idempotency_keys ADD COLUMN inbox_id text;
CREATE INDEX idempotency_keys_inbox ON idempotency_keys (inbox_id) WHERE inbox_id IS NOT NULL;
