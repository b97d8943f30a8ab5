-- When each person last wrote to each chat service (the customer window
-- of WhatsApp).
CREATE TABLE chat_contacts (
	service_id      bigint NOT NULL,
	phone           text NOT NULL,
	last_inbound_at timestamptz NOT NULL,
	PRIMARY KEY (service_id, phone)
);
--bun:split
-- The provider callbacks already taken, each kept until a time, then
-- purged.
CREATE TABLE chat_replays (
	replay_key text PRIMARY KEY,
	until      timestamptz NOT NULL
);
--bun:split
CREATE INDEX chat_replays_until ON chat_replays (until);
