-- The client's peer group (an IPv4 address, an IPv6 /64) beside each accepted message, for the
-- inbound queue's share per peer: a sender whose DNS answers slowly holds its analyses for the
-- DNS budget each, and without a share its burst filled every analysis and delayed all other mail.
-- Rows accepted before it are of no peer ('') and share one group.
ALTER TABLE accepted_inbound ADD COLUMN peer TEXT NOT NULL DEFAULT '';
