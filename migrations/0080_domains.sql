-- Custom domains of organizations. The records a domain must publish follow from the configuration
-- (host name, addresses) and its DKIM keys (dkim_keys, by name); this table keeps the outcome of the
-- last look-up of each record and when to look again.
CREATE TABLE domains (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  name TEXT NOT NULL UNIQUE COLLATE NOCASE,  -- ASCII (A-labels), lower-case; claimed by one organization
  status TEXT NOT NULL,                      -- pending, verified, failed
  receiving INTEGER NOT NULL DEFAULT 0,      -- MX verified: inboxes and inbound mail on it
  sending INTEGER NOT NULL DEFAULT 0,        -- SPF, DMARC and the signing DKIM keys verified
  record_checks TEXT NOT NULL DEFAULT '{}',  -- JSON {"<type> <name>": {status, reason?}} from the last look-up
  verified_at INTEGER,                       -- when status last became verified; NULL while it is not
  records_changed_at INTEGER NOT NULL,       -- creation or the last key rotation: checks are frequent for a day after
  checked_at INTEGER,
  next_check_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX domains_organization ON domains(organization_id, created_at);
CREATE INDEX domains_next_check ON domains(next_check_at);

-- A domain's keys go with it, also when its organization's deletion cascades to it.
CREATE TRIGGER domains_delete_dkim_keys AFTER DELETE ON domains BEGIN
  DELETE FROM dkim_keys WHERE domain = OLD.name AND organization_id = OLD.organization_id;
END;
