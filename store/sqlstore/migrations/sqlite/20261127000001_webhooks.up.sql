-- Webhook endpoints: where a company receives events. events is the list
-- of event types, comma-separated; previous_secret signs beside secret
-- until previous_until (a rotation's overlap).
CREATE TABLE webhook_endpoints (
	id              BLOB PRIMARY KEY NOT NULL,
	company_id      BLOB NOT NULL,
	url             TEXT NOT NULL,
	events          TEXT NOT NULL,
	secret          TEXT NOT NULL,
	previous_secret TEXT NOT NULL DEFAULT '',
	previous_until  INTEGER,
	created_at      INTEGER NOT NULL,
	disabled_at     INTEGER,
	disabled_reason TEXT NOT NULL DEFAULT ''
);
--bun:split
CREATE INDEX webhook_endpoints_company ON webhook_endpoints (company_id, created_at, id);
--bun:split
-- Events, written in the transaction of the change they report, and one
-- delivery per event and subscribed endpoint, waiting (state 0) until the
-- endpoint took it (1) or Herald gave up (2). subject_id is the message
-- or campaign the event is about: an endpoint gets one subject's events
-- in order.
CREATE TABLE webhook_events (
	id         BLOB PRIMARY KEY NOT NULL,
	company_id BLOB NOT NULL,
	type       TEXT NOT NULL,
	subject_id BLOB NOT NULL,
	created_at INTEGER NOT NULL,
	data       TEXT NOT NULL
);
--bun:split
CREATE TABLE webhook_deliveries (
	id              BLOB PRIMARY KEY NOT NULL,
	endpoint_id     BLOB NOT NULL,
	event_id        BLOB NOT NULL,
	subject_id      BLOB NOT NULL,
	state           INTEGER NOT NULL DEFAULT 0,
	attempts        INTEGER NOT NULL DEFAULT 0,
	next_at         INTEGER NOT NULL,
	last_at         INTEGER,
	last_status     INTEGER NOT NULL DEFAULT 0,
	last_error      TEXT NOT NULL DEFAULT '',
	last_latency_us INTEGER NOT NULL DEFAULT 0
);
--bun:split
-- The deliveries an endpoint is waiting for, oldest first.
CREATE INDEX webhook_deliveries_waiting ON webhook_deliveries (endpoint_id, id) WHERE state = 0;
--bun:split
-- An endpoint's deliveries by event, for its delivery log and redelivery.
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (endpoint_id, event_id);
