-- Idempotency-Key (draft-ietf-httpapi-idempotency-key-header): the first request with a key, per
-- organization, and its final response, replayed to a retry of the same request for 24 hours.
-- status_code is NULL while the first request is still running. A large response body is staged
-- in blob_chunks (migrations/0100) and named by blob_id, which no other row shares.
CREATE TABLE idempotency_keys (
  organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  idempotency_key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,              -- SHA-256 of method, path and body
  status_code INTEGER,
  response_body BLOB,
  blob_id TEXT,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (organization_id, idempotency_key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys(expires_at);
CREATE TRIGGER idempotency_keys_blob_gone AFTER DELETE ON idempotency_keys
WHEN OLD.blob_id IS NOT NULL
BEGIN
  DELETE FROM blob_chunks WHERE blob_id = OLD.blob_id;
END;
