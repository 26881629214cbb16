-- DKIM key pairs of every domain we sign for: the service's own mail domain (organization_id NULL,
-- generated on first start) and each custom domain. status: 'active' keys sign; 'pending' keys are
-- published but wait for their DNS record to verify (rotation); 'retired' keys are kept published
-- until removed so mail signed with them still verifies.
CREATE TABLE dkim_keys (
  id TEXT PRIMARY KEY,
  domain TEXT NOT NULL COLLATE NOCASE,
  organization_id TEXT,
  selector TEXT NOT NULL,
  algorithm TEXT NOT NULL,              -- rsa-sha256 or ed25519-sha256
  private_key_pem TEXT NOT NULL,
  public_key_base64 TEXT NOT NULL,
  status TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (domain, selector)
);
CREATE INDEX dkim_keys_domain ON dkim_keys(domain, status);
