-- The Reply-To addresses of a received message (RFC 5322 §3.6.2): where its author asks replies to
-- go, which a reply through the API addresses (src/messages/send.ts). Empty for sent mail and for
-- messages stored before this migration.
ALTER TABLE messages ADD COLUMN reply_to_addresses TEXT NOT NULL DEFAULT '[]';
