-- Webhook endpoints: where a company receives events. events is the list
-- of event types, comma-separated; previous_secret signs beside secret
-- until previous_until (a rotation's overlap).
CREATE TABLE webhook_endpoints (
	id              uuid PRIMARY KEY,
	company_id      uuid NOT NULL,
	url             text NOT NULL,
	events          text NOT NULL,
	secret          text NOT NULL,
	previous_secret text NOT NULL DEFAULT '',
	previous_until  timestamptz,
	created_at      timestamptz NOT NULL,
	disabled_at     timestamptz,
	disabled_reason text NOT NULL DEFAULT ''
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
	id         uuid PRIMARY KEY,
	company_id uuid NOT NULL,
	type       text NOT NULL,
	subject_id uuid NOT NULL,
	created_at timestamptz NOT NULL,
	data       text NOT NULL
);
--bun:split
CREATE TABLE webhook_deliveries (
	id              uuid PRIMARY KEY,
	endpoint_id     uuid NOT NULL,
	event_id        uuid NOT NULL,
	subject_id      uuid NOT NULL,
	state           smallint NOT NULL DEFAULT 0,
	attempts        integer NOT NULL DEFAULT 0,
	next_at         timestamptz NOT NULL,
	last_at         timestamptz,
	last_status     integer NOT NULL DEFAULT 0,
	last_error      text NOT NULL DEFAULT '',
	last_latency_us bigint NOT NULL DEFAULT 0
);
--bun:split
-- The deliveries an endpoint is waiting for, oldest first.
CREATE INDEX webhook_deliveries_waiting ON webhook_deliveries (endpoint_id, id) WHERE state = 0;
--bun:split
-- An endpoint's deliveries by event, for its delivery log and redelivery.
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (endpoint_id, event_id);
