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
