-- Certificates that inboxd obtains itself over ACME (RFC 8555), kept in the database so that every
-- node of one installation serves and renews the same ones. Private keys are sealed (secret-box).

-- One account per ACME directory (Let's Encrypt, a private CA): its key pair and the URL the CA
-- gave it (the key ID of every later request, RFC 8555 §7.3).
CREATE TABLE acme_accounts (
  directory_url TEXT PRIMARY KEY,
  email TEXT NOT NULL,
  private_key_pem TEXT NOT NULL,
  account_url TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);

-- One certificate per host name it serves (the mail host, the API host, mta-sts.<domain>), with
-- the renewal state: the next try is due at next_attempt_at (2/3 of the lifetime, or a backoff
-- after failures).
CREATE TABLE tls_certificates (
  name TEXT PRIMARY KEY COLLATE NOCASE,
  certificate_pem TEXT,
  private_key_pem TEXT,
  not_before INTEGER,
  not_after INTEGER,
  failures INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  next_attempt_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);

-- HTTP-01 challenges under way (RFC 8555 §8.3): whichever node the CA reaches answers them.
CREATE TABLE acme_challenges (
  token TEXT PRIMARY KEY,
  key_authorization TEXT NOT NULL,
  expires_at INTEGER NOT NULL
);

-- Recipients' MTA-STS policies (RFC 8461 §3.3), cached for their max_age.
CREATE TABLE mta_sts_policies (
  domain TEXT PRIMARY KEY COLLATE NOCASE,
  policy_id TEXT NOT NULL,
  mode TEXT NOT NULL,
  mx_patterns TEXT NOT NULL,
  max_age INTEGER NOT NULL,
  fetched_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
