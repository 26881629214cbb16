-- Outbound delivery: the queue claims the due deliveries of one destination domain, oldest first.
CREATE INDEX deliveries_domain_due ON deliveries(domain, next_attempt_at) WHERE next_attempt_at IS NOT NULL;

-- Addresses an organization no longer sends to: they hard-bounced (5xx to the address, or a DSN
-- saying so) or their owner complained (ARF). A later send to one is rejected without a try.
CREATE TABLE suppressions (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  address TEXT NOT NULL COLLATE NOCASE,
  reason TEXT NOT NULL,                 -- bounced or complained
  detail TEXT,                          -- the remote server's reply or the report's status
  message_id TEXT,                      -- the message whose delivery caused it; kept when that message is deleted
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (organization_id, address)
);
CREATE INDEX suppressions_organization ON suppressions(organization_id, created_at);
