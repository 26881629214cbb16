-- Webhook secrets (webhooks.secret) and DKIM private keys (dkim_keys.private_key_pem) are stored
-- sealed with a key kept outside the database (src/store/secrets.ts). The one row here holds a
-- known value sealed with that key: a start with another key is refused before any secret is
-- needed. It is written, and the secrets stored until then in the clear are sealed, at the first
-- start after this migration (in code: the key is not known to SQL).
CREATE TABLE secret_box (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  probe TEXT NOT NULL,
  sealed_at INTEGER NOT NULL
);
