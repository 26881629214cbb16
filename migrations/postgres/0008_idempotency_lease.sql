-- A request holds its idempotency key under a lease, as a node holds its queue claims (leases.ts):
-- a node that dies in the middle of the request stops renewing it, and a retry of the request on
-- another node takes the key over once the lease has run out, instead of 409 until a restart.
-- A key taken before this migration has none, and waits for its node's restart as before.
ALTER TABLE idempotency_keys ADD COLUMN lease_until bigint;
