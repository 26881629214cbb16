-- The nodes working this database, each row renewed while its node runs (src/store/postgres/nodes.ts):
-- a node does not start while another one, alive, serves another INBOXD_MAIL_DOMAIN, since each
-- would refuse the mail of the other's inboxes with 550.
CREATE TABLE nodes (
  name text PRIMARY KEY,
  mail_domain text NOT NULL,
  seen_at bigint NOT NULL
);
