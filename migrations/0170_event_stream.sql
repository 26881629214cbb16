-- The live event stream (GET /v1/events) reads an organization's events in id order, which is the
-- order they were committed in; the retention purge finds the old ones by time. Nothing read
-- events by organization and time.
DROP INDEX events_organization;
CREATE INDEX events_organization_id ON events(organization_id, id);
CREATE INDEX events_created ON events(created_at);
