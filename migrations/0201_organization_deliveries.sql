-- The outbound queue across an organization's inboxes (GET /v1/deliveries), newest first, read
-- from this index whatever the filter: status, domain and inbox narrow the rows it walks.
CREATE INDEX deliveries_organization_created ON deliveries(organization_id, created_at);
