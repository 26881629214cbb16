-- The client's peer group beside each accepted message, as migrations/0220_accepted_inbound_peer.sql.
ALTER TABLE accepted_inbound ADD COLUMN peer TEXT NOT NULL DEFAULT '';
