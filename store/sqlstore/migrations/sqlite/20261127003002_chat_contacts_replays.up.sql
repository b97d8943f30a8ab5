-- When each person last wrote to each chat service (the customer window
-- of WhatsApp).
CREATE TABLE chat_contacts (
	service_id      INTEGER NOT NULL,
	phone           text NOT NULL,
	last_inbound_at INTEGER NOT NULL,
	PRIMARY KEY (service_id, phone)
);
--bun:split
-- The provider callbacks already taken, each kept until a time, then
-- purged.
CREATE TABLE chat_replays (
	replay_key text PRIMARY KEY,
	until      INTEGER NOT NULL
);
--bun:split
CREATE INDEX chat_replays_until ON chat_replays (until);
