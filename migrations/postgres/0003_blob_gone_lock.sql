-- Two transactions deleting the last two rows that name one blob (a sent message and its local
-- copy, in two inboxes deleted at the same moment) each still saw the other's row (READ
-- COMMITTED), and neither deleted the chunks, which nothing named any more. The blob's lock, held
-- until the commit, puts the second check after the first's commit: each statement of a plpgsql
-- function reads with a snapshot of its own.
CREATE OR REPLACE FUNCTION blob_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('blob:' || OLD.blob_id, 0));
  IF NOT EXISTS (SELECT 1 FROM message_sources WHERE blob_id = OLD.blob_id)
     AND NOT EXISTS (SELECT 1 FROM attachments WHERE blob_id = OLD.blob_id) THEN
    DELETE FROM blob_chunks WHERE blob_id = OLD.blob_id;
  END IF;
  RETURN NULL;
END $$;
