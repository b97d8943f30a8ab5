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
