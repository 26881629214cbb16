-- The sender's display name beside its address: the name of a received message's From field, or
-- the sending inbox's name on a sent message. NULL when there is none (older rows too).
ALTER TABLE messages ADD COLUMN from_name TEXT;
