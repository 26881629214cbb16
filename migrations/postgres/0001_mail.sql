-- The PostgreSQL engine's tables of accounts, inboxes, mail, events, drafts and the keys and
-- limits around them (src/store/postgres/). The same tables as the embedded engine's migrations
-- (migrations/*.sql) in their latest form, so that `inboxd db copy` moves rows as they are.
-- Times are bigint milliseconds since the epoch (UTC); JSON is jsonb. SQLite's rowid breaks ties
-- of equal times there; here the ids do (src/ids.ts: time-ordered, and in creation order within
-- one process). Case-insensitive addresses (SQLite's COLLATE NOCASE) are unique on lower().

-- The trigram index of the message search (below); a trusted extension since PostgreSQL 13, so
-- the database's owner may create it.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- The probe of the key that seals secrets at rest (src/store/secret-box.ts), as secret_box in
-- migrations/0090_secret_box.sql.
CREATE TABLE secret_box (
  id integer PRIMARY KEY CHECK (id = 1),
  probe text NOT NULL,
  sealed_at bigint NOT NULL
);

CREATE TABLE users (
  id text PRIMARY KEY,
  email text NOT NULL,
  first_name text NOT NULL,
  last_name text NOT NULL,
  password_hash text NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE UNIQUE INDEX users_email ON users (lower(email));

CREATE TABLE organizations (
  id text PRIMARY KEY,
  name text NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);

CREATE TABLE memberships (
  user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  organization_id text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  role text NOT NULL,
  created_at bigint NOT NULL,
  PRIMARY KEY (user_id, organization_id)
);
CREATE INDEX memberships_organization ON memberships (organization_id);

CREATE TABLE access_tokens (
  token_hash text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  expires_at bigint NOT NULL,
  created_at bigint NOT NULL
);
CREATE INDEX access_tokens_user ON access_tokens (user_id);

CREATE TABLE api_keys (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  name text NOT NULL,
  prefix text NOT NULL,
  key_hash text NOT NULL UNIQUE,
  created_at bigint NOT NULL,
  last_used_at bigint
);
CREATE INDEX api_keys_organization ON api_keys (organization_id, created_at, id);

-- Login brute-force throttle (migrations/0030_login_throttles.sql): shared by every node.
CREATE TABLE login_throttles (
  subject text PRIMARY KEY,
  window_start bigint NOT NULL,
  attempts integer NOT NULL,
  locked_until bigint,
  expires_at bigint NOT NULL
);
CREATE INDEX login_throttles_expiry ON login_throttles (expires_at);

CREATE TABLE inboxes (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  name text,
  email text NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE UNIQUE INDEX inboxes_email ON inboxes (lower(email));
CREATE INDEX inboxes_organization ON inboxes (organization_id, created_at, id);

CREATE TABLE threads (
  id text PRIMARY KEY,
  organization_id text NOT NULL,
  inbox_id text NOT NULL REFERENCES inboxes(id) ON DELETE CASCADE,
  subject text NOT NULL,
  message_count integer NOT NULL DEFAULT 0,
  last_message_at bigint NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE INDEX threads_inbox_activity ON threads (inbox_id, last_message_at, id);

CREATE TABLE messages (
  id text PRIMARY KEY,
  organization_id text NOT NULL,
  inbox_id text NOT NULL REFERENCES inboxes(id) ON DELETE CASCADE,
  thread_id text NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
  from_inbox_id text,
  to_inbox_id text,
  from_address text NOT NULL,
  from_name text,
  to_addresses jsonb NOT NULL,
  cc_addresses jsonb NOT NULL DEFAULT '[]',
  bcc_addresses jsonb NOT NULL DEFAULT '[]',
  subject text NOT NULL,
  text text,
  html text,
  labels jsonb NOT NULL DEFAULT '[]',
  read boolean NOT NULL DEFAULT true,
  status text NOT NULL,
  message_id_header text,
  in_reply_to text,
  references_header jsonb NOT NULL DEFAULT '[]',
  authentication jsonb,
  external_message_id text,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE INDEX messages_inbox_created ON messages (inbox_id, created_at, id);
CREATE INDEX messages_thread ON messages (thread_id, created_at, id);
CREATE INDEX messages_inbox_message_id ON messages (inbox_id, message_id_header);
CREATE INDEX messages_unread_inbox ON messages (inbox_id) WHERE NOT read;
CREATE INDEX messages_unread_thread ON messages (thread_id) WHERE NOT read;
-- The search (src/store/postgres/message-search.ts): case-insensitive substrings of 3 characters
-- or more through ILIKE, which these trigram indexes answer, one per field, so that a match never
-- spans two fields.
CREATE INDEX messages_subject_trgm ON messages USING gin (subject gin_trgm_ops);
CREATE INDEX messages_text_trgm ON messages USING gin (text gin_trgm_ops);
CREATE INDEX messages_from_trgm ON messages USING gin (from_address gin_trgm_ops);

-- Large values (migrations/0100_blob_chunks.sql): written in chunks ahead of the transaction that
-- claims them; staged_blobs lists those no row has claimed yet, with the run of the node that is
-- writing them (src/store/postgres/leases.ts), so that a node's next start removes its own.
CREATE TABLE blob_chunks (
  blob_id text NOT NULL,
  seq integer NOT NULL,
  bytes bytea NOT NULL,
  PRIMARY KEY (blob_id, seq)
);
CREATE TABLE staged_blobs (
  blob_id text PRIMARY KEY,
  staged_by text NOT NULL,
  created_at bigint NOT NULL
);

CREATE TABLE message_sources (
  message_id text PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
  raw bytea NOT NULL,
  blob_id text
);
CREATE INDEX message_sources_blob ON message_sources (blob_id) WHERE blob_id IS NOT NULL;

CREATE TABLE attachments (
  id text PRIMARY KEY,
  message_id text NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
  position integer NOT NULL,
  name text,
  content_type text,
  content_id text,
  inline boolean NOT NULL DEFAULT false,
  content bytea NOT NULL,
  blob_id text
);
CREATE INDEX attachments_message ON attachments (message_id, position);
CREATE INDEX attachments_blob ON attachments (blob_id) WHERE blob_id IS NOT NULL;

-- A blob goes with the last row that names it (a message deleted alone, or with its inbox); rows
-- of drafts and idempotency keys never share theirs.
CREATE FUNCTION blob_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM message_sources WHERE blob_id = OLD.blob_id)
     AND NOT EXISTS (SELECT 1 FROM attachments WHERE blob_id = OLD.blob_id) THEN
    DELETE FROM blob_chunks WHERE blob_id = OLD.blob_id;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER message_sources_blob_gone AFTER DELETE ON message_sources
  FOR EACH ROW WHEN (OLD.blob_id IS NOT NULL) EXECUTE FUNCTION blob_gone();
CREATE TRIGGER attachments_blob_gone AFTER DELETE ON attachments
  FOR EACH ROW WHEN (OLD.blob_id IS NOT NULL) EXECUTE FUNCTION blob_gone();

-- One row per label of a message (migrations/0150_labels.sql), kept in step with messages.labels
-- by the trigger below however a message is written.
CREATE TABLE message_labels (
  inbox_id text NOT NULL,
  label text NOT NULL,
  created_at bigint NOT NULL,
  message_id text NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
  thread_id text NOT NULL,
  PRIMARY KEY (inbox_id, label, created_at, message_id)
);
CREATE INDEX message_labels_message ON message_labels (message_id);
CREATE INDEX message_labels_thread ON message_labels (inbox_id, label, thread_id);

CREATE FUNCTION message_labels_in_step() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    DELETE FROM message_labels WHERE message_id = OLD.id;
  END IF;
  INSERT INTO message_labels (inbox_id, label, created_at, message_id, thread_id)
  SELECT NEW.inbox_id, label, NEW.created_at, NEW.id, NEW.thread_id FROM jsonb_array_elements_text(NEW.labels) AS label
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;
CREATE TRIGGER message_labels_insert AFTER INSERT ON messages
  FOR EACH ROW WHEN (NEW.labels <> '[]'::jsonb) EXECUTE FUNCTION message_labels_in_step();
CREATE TRIGGER message_labels_update AFTER UPDATE OF labels ON messages
  FOR EACH ROW EXECUTE FUNCTION message_labels_in_step();

-- Every change other parts react to (webhooks, the event stream), written in the transaction of
-- the change; read per organization in id order (migrations/0170_event_stream.sql).
-- Ids compare byte by byte (COLLATE "C"), whatever the database's collation: readers resume after
-- the last id they saw.
CREATE TABLE events (
  id text COLLATE "C" PRIMARY KEY,
  organization_id text NOT NULL,
  type text NOT NULL,
  inbox_id text,
  message_id text,
  payload text NOT NULL,
  created_at bigint NOT NULL
);
CREATE INDEX events_organization_id ON events (organization_id, id);
CREATE INDEX events_created ON events (created_at);

-- Fixed windows of the send limit, one counter per organization and window: shared by every node.
CREATE TABLE send_windows (
  organization_id text NOT NULL,
  window_start bigint NOT NULL,
  count integer NOT NULL,
  PRIMARY KEY (organization_id, window_start)
);

CREATE TABLE drafts (
  id text PRIMARY KEY,
  organization_id text NOT NULL,
  inbox_id text NOT NULL REFERENCES inboxes(id) ON DELETE CASCADE,
  thread_id text,
  in_reply_to_message_id text,
  to_addresses jsonb NOT NULL,
  cc_addresses jsonb NOT NULL,
  bcc_addresses jsonb NOT NULL,
  subject text,
  text text,
  html text,
  labels jsonb NOT NULL,
  send_at bigint,
  status text NOT NULL,
  message_id text,
  failure_reason text,
  attempts integer NOT NULL,
  next_attempt_at bigint,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE INDEX drafts_inbox ON drafts (inbox_id, created_at, id);
CREATE INDEX drafts_due ON drafts (next_attempt_at, id) WHERE next_attempt_at IS NOT NULL;

CREATE TABLE draft_attachments (
  draft_id text NOT NULL REFERENCES drafts(id) ON DELETE CASCADE,
  position integer NOT NULL,
  name text,
  content_type text NOT NULL,
  size integer NOT NULL,
  content bytea NOT NULL,
  blob_id text,
  PRIMARY KEY (draft_id, position)
);

CREATE TABLE idempotency_keys (
  organization_id text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  idempotency_key text NOT NULL,
  fingerprint text NOT NULL,
  status_code integer,
  response_body bytea,
  blob_id text,
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  -- The run of the node whose request holds the key until its response is stored (leases.ts).
  held_by text,
  PRIMARY KEY (organization_id, idempotency_key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);

-- A draft attachment's or an idempotency key's blob is its own: it goes with the row.
CREATE FUNCTION own_blob_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM blob_chunks WHERE blob_id = OLD.blob_id;
  RETURN NULL;
END $$;
CREATE TRIGGER draft_attachments_blob_gone AFTER DELETE ON draft_attachments
  FOR EACH ROW WHEN (OLD.blob_id IS NOT NULL) EXECUTE FUNCTION own_blob_gone();
CREATE TRIGGER idempotency_keys_blob_gone AFTER DELETE ON idempotency_keys
  FOR EACH ROW WHEN (OLD.blob_id IS NOT NULL) EXECUTE FUNCTION own_blob_gone();

CREATE TABLE access_rules (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  inbox_id text REFERENCES inboxes(id) ON DELETE CASCADE,
  direction text NOT NULL,
  action text NOT NULL,
  value text NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE UNIQUE INDEX access_rules_entry ON access_rules (organization_id, direction, coalesce(inbox_id, ''), action, value);
CREATE INDEX access_rules_organization ON access_rules (organization_id, created_at, id);
