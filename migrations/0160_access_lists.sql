-- Allow and block lists: which senders an organization or one of its inboxes takes mail from
-- (receive) and which recipients it sends to (send). `value` is a lower-case address or a domain
-- name (which also covers its subdomains); src/access/rules.ts decides with them.
CREATE TABLE access_rules (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  inbox_id TEXT REFERENCES inboxes(id) ON DELETE CASCADE,   -- NULL: every inbox of the organization
  direction TEXT NOT NULL,              -- receive or send
  action TEXT NOT NULL,                 -- allow or block
  value TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX access_rules_entry ON access_rules(organization_id, direction, coalesce(inbox_id, ''), action, value);
CREATE INDEX access_rules_organization ON access_rules(organization_id, created_at);
