-- Webhooks: the endpoints, the delivery queue (one row per event and subscribed webhook) and the
-- log of every try. Times are integer milliseconds since the epoch.

CREATE TABLE webhooks (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  url TEXT NOT NULL,
  events TEXT NOT NULL,                 -- JSON array of event names
  secret TEXT NOT NULL,                 -- whsec_...: kept as is, since signing needs the key itself
  enabled INTEGER NOT NULL DEFAULT 1,
  disabled_reason TEXT,
  first_failure_at INTEGER,             -- start of the current run of failures; NULL after a success
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX webhooks_organization ON webhooks(organization_id, created_at);

-- The queue. The integer id is the creation order, which orders events that are due together.
CREATE TABLE webhook_deliveries (
  id INTEGER PRIMARY KEY,
  webhook_id TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
  event_id TEXT NOT NULL REFERENCES events(id) ON DELETE CASCADE,
  status TEXT NOT NULL,                 -- pending, succeeded, failed
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER,              -- NULL once final
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
-- Pending deliveries only, so the index stays as small as the backlog. Indexes on columns that
-- change with every try cost writes on the hot path: the others are set once.
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at, id) WHERE next_attempt_at IS NOT NULL;
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries(webhook_id);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries(event_id);

-- One row per try, written before the request goes out; the outcome columns are filled after.
-- The body sent is rebuilt from the event, so large payloads are not copied per try. Ids begin
-- with the time, so that new rows append to the primary key index instead of scattering.
CREATE TABLE webhook_attempts (
  id TEXT PRIMARY KEY,
  webhook_id TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
  delivery_id INTEGER NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
  event TEXT NOT NULL,
  url TEXT NOT NULL,
  attempt_number INTEGER NOT NULL,
  status_code INTEGER,                  -- NULL when no response came (or none yet)
  response TEXT,                        -- the first 4 kB of the response body
  success INTEGER NOT NULL DEFAULT 0,
  error TEXT,                           -- why the try failed without a status, or what a status meant
  finished_at INTEGER,                  -- NULL while the request is in flight (its delivery is pending)
  created_at INTEGER NOT NULL
);
CREATE INDEX webhook_attempts_webhook ON webhook_attempts(webhook_id, created_at);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts(delivery_id);

-- Fan-out in the transaction that writes the event: one delivery per enabled webhook of the
-- organization subscribed to the event's type. The test endpoint's events (ids `evt_test_...`)
-- go to one webhook only, so the test service queues their delivery itself.
CREATE TRIGGER events_fan_out_to_webhooks AFTER INSERT ON events
WHEN substr(NEW.id, 1, 9) <> 'evt_test_'
BEGIN
  INSERT INTO webhook_deliveries (webhook_id, event_id, status, attempts, next_attempt_at, created_at, updated_at)
  SELECT w.id, NEW.id, 'pending', 0, NEW.created_at, NEW.created_at, NEW.created_at
  FROM webhooks w
  WHERE w.organization_id = NEW.organization_id
    AND w.enabled = 1
    AND EXISTS (SELECT 1 FROM json_each(w.events) WHERE json_each.value = NEW.type)
  ORDER BY w.created_at, w.id;
END;
