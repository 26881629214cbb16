-- Core tables: accounts, inboxes, threads, messages, events, outbound deliveries, send rate windows.
-- Times are integer milliseconds since the epoch (UTC); the HTTP layer renders them as ISO 8601.

CREATE TABLE users (
  id TEXT PRIMARY KEY,
  email TEXT NOT NULL UNIQUE COLLATE NOCASE,
  first_name TEXT NOT NULL,
  last_name TEXT NOT NULL,
  password_hash TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);

CREATE TABLE organizations (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);

CREATE TABLE memberships (
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  role TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (user_id, organization_id)
);
CREATE INDEX memberships_organization ON memberships(organization_id);

CREATE TABLE access_tokens (
  token_hash TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  expires_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX access_tokens_user ON access_tokens(user_id);

CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  prefix TEXT NOT NULL,
  key_hash TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL,
  last_used_at INTEGER
);
CREATE INDEX api_keys_organization ON api_keys(organization_id, created_at);

CREATE TABLE inboxes (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  name TEXT,
  email TEXT NOT NULL UNIQUE COLLATE NOCASE,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX inboxes_organization ON inboxes(organization_id, created_at);

CREATE TABLE threads (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  inbox_id TEXT NOT NULL REFERENCES inboxes(id) ON DELETE CASCADE,
  subject TEXT NOT NULL,
  message_count INTEGER NOT NULL DEFAULT 0,
  last_message_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX threads_inbox_activity ON threads(inbox_id, last_message_at);

CREATE TABLE messages (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  inbox_id TEXT NOT NULL REFERENCES inboxes(id) ON DELETE CASCADE,
  thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
  from_inbox_id TEXT,
  to_inbox_id TEXT,
  from_address TEXT NOT NULL,
  to_addresses TEXT NOT NULL,            -- JSON array
  cc_addresses TEXT NOT NULL DEFAULT '[]',
  bcc_addresses TEXT NOT NULL DEFAULT '[]',
  subject TEXT NOT NULL,
  text TEXT,
  html TEXT,
  labels TEXT NOT NULL DEFAULT '[]',
  status TEXT NOT NULL,
  message_id_header TEXT,               -- the RFC 5322 Message-ID, for threading
  in_reply_to TEXT,
  references_header TEXT NOT NULL DEFAULT '[]',
  authentication TEXT,                  -- JSON {spf, dkim, dmarc, arc}
  external_message_id TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX messages_inbox_created ON messages(inbox_id, created_at);
CREATE INDEX messages_thread ON messages(thread_id, created_at);
CREATE INDEX messages_inbox_message_id ON messages(inbox_id, message_id_header);

-- The raw RFC 5322 source, apart from the row so lists never page it in.
CREATE TABLE message_sources (
  message_id TEXT PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
  raw BLOB NOT NULL
);

CREATE TABLE attachments (
  id TEXT PRIMARY KEY,
  message_id TEXT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  name TEXT,
  content_type TEXT,
  content_id TEXT,
  inline INTEGER NOT NULL DEFAULT 0,
  content BLOB NOT NULL
);
CREATE INDEX attachments_message ON attachments(message_id, position);

-- Every change other parts may react to (webhooks), written in the transaction of the change.
CREATE TABLE events (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  type TEXT NOT NULL,
  inbox_id TEXT,
  message_id TEXT,
  payload TEXT NOT NULL,                -- JSON, the resource as the API shows it at that moment
  created_at INTEGER NOT NULL
);
CREATE INDEX events_organization ON events(organization_id, created_at);

-- One row per remote recipient of a sent message: the outbound queue.
CREATE TABLE deliveries (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  message_id TEXT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
  recipient TEXT NOT NULL,
  domain TEXT NOT NULL,
  status TEXT NOT NULL,                 -- queued, delivered, bounced, rejected
  attempts INTEGER NOT NULL DEFAULT 0,
  last_response TEXT,
  next_attempt_at INTEGER,              -- NULL once final
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX deliveries_due ON deliveries(next_attempt_at) WHERE next_attempt_at IS NOT NULL;
CREATE INDEX deliveries_message ON deliveries(message_id);

-- Fixed hourly windows of the send limit; rows survive restarts.
CREATE TABLE send_windows (
  organization_id TEXT NOT NULL,
  window_start INTEGER NOT NULL,
  count INTEGER NOT NULL,
  PRIMARY KEY (organization_id, window_start)
);
