-- Herald's schema on SQLite. Identifiers are 16-byte UUID blobs, times are
-- INTEGER microseconds since the Unix epoch (UTC), booleans are 0 or 1.
CREATE TABLE companies (
	id            BLOB PRIMARY KEY NOT NULL,
	name          TEXT NOT NULL,
	active        INTEGER NOT NULL DEFAULT 0,
	api_key_hash  BLOB UNIQUE,
	pending_count INTEGER NOT NULL DEFAULT 0,
	created_at    INTEGER NOT NULL
);
--bun:split
CREATE TABLE sms_senders (
	id         INTEGER PRIMARY KEY,
	company_id BLOB NOT NULL,
	sender_id  TEXT NOT NULL,
	approved   INTEGER NOT NULL DEFAULT 0,
	created_at INTEGER NOT NULL
);
--bun:split
CREATE INDEX sms_senders_company ON sms_senders (company_id);
--bun:split
CREATE TABLE chat_services (
	id                  INTEGER PRIMARY KEY,
	company_id          BLOB NOT NULL,
	brand_name          TEXT NOT NULL,
	provider_service_id TEXT NOT NULL,
	created_at          INTEGER NOT NULL
);
--bun:split
CREATE INDEX chat_services_company ON chat_services (company_id);
--bun:split
CREATE TABLE templates (
	id                     BLOB PRIMARY KEY NOT NULL,
	company_id             BLOB NOT NULL,
	name                   TEXT NOT NULL,
	description            TEXT NOT NULL DEFAULT '',
	channel                TEXT NOT NULL,
	message_type           INTEGER NOT NULL,
	content                TEXT NOT NULL DEFAULT '',
	sms_sender_id          INTEGER NOT NULL DEFAULT 0,
	chat_service_id        INTEGER NOT NULL DEFAULT 0,
	config                 TEXT,
	sms_fallback_enabled   INTEGER NOT NULL DEFAULT 0,
	sms_fallback_content   TEXT NOT NULL DEFAULT '',
	sms_fallback_sender_id INTEGER NOT NULL DEFAULT 0,
	created_at             INTEGER NOT NULL,
	updated_at             INTEGER NOT NULL,
	CONSTRAINT templates_company_name UNIQUE (company_id, name)
);
--bun:split
CREATE TABLE campaigns (
	id                 BLOB PRIMARY KEY NOT NULL,
	company_id         BLOB NOT NULL,
	name               TEXT NOT NULL DEFAULT '',
	description        TEXT NOT NULL DEFAULT '',
	channel            TEXT NOT NULL,
	mode               TEXT NOT NULL,
	status             TEXT NOT NULL,
	hidden             INTEGER NOT NULL DEFAULT 0,
	template_id        BLOB,
	template_name      TEXT NOT NULL DEFAULT '',
	message_type       INTEGER NOT NULL,
	config             TEXT,
	sms_sender_id      INTEGER NOT NULL DEFAULT 0,
	chat_service_id    INTEGER NOT NULL DEFAULT 0,
	fallback_sender_id INTEGER NOT NULL DEFAULT 0,
	planned            INTEGER NOT NULL DEFAULT 0,
	pending            INTEGER NOT NULL DEFAULT 0,
	sending            INTEGER NOT NULL DEFAULT 0,
	sent               INTEGER NOT NULL DEFAULT 0,
	delivered          INTEGER NOT NULL DEFAULT 0,
	seen               INTEGER NOT NULL DEFAULT 0,
	failed             INTEGER NOT NULL DEFAULT 0,
	fb_pending         INTEGER NOT NULL DEFAULT 0,
	fb_sending         INTEGER NOT NULL DEFAULT 0,
	fb_sent            INTEGER NOT NULL DEFAULT 0,
	fb_delivered       INTEGER NOT NULL DEFAULT 0,
	fb_seen            INTEGER NOT NULL DEFAULT 0,
	fb_failed          INTEGER NOT NULL DEFAULT 0,
	failure_reason     TEXT NOT NULL DEFAULT '',
	created_at         INTEGER NOT NULL,
	updated_at         INTEGER NOT NULL,
	started_at         INTEGER,
	completed_at       INTEGER
);
--bun:split
-- GET /campaigns: a company's visible campaigns, newest first.
CREATE INDEX campaigns_list ON campaigns (company_id, created_at, id) WHERE NOT hidden;
--bun:split
-- The dispatcher's view: the few campaigns whose messages may be sent.
CREATE INDEX campaigns_in_progress ON campaigns (mode) WHERE status = 'InProgress';
--bun:split
CREATE TABLE messages (
	id                  BLOB PRIMARY KEY NOT NULL,
	company_id          BLOB NOT NULL,
	campaign_id         BLOB NOT NULL,
	fallback_for        BLOB,
	due_at              INTEGER NOT NULL,
	created_at          INTEGER NOT NULL,
	updated_at          INTEGER NOT NULL,
	lease_until         INTEGER,
	sent_at             INTEGER,
	delivered_at        INTEGER,
	seen_at             INTEGER,
	attempts            INTEGER NOT NULL DEFAULT 0,
	channel             TEXT NOT NULL,
	status              TEXT NOT NULL,
	phone               TEXT NOT NULL,
	external_user_id    TEXT NOT NULL DEFAULT '',
	content             TEXT NOT NULL DEFAULT '',
	config              TEXT,
	fallback_content    TEXT NOT NULL DEFAULT '',
	details             TEXT NOT NULL DEFAULT '',
	sms_error_code      TEXT NOT NULL DEFAULT '',
	provider_message_id TEXT
);
--bun:split
-- Claiming: Pending messages of one campaign and channel, oldest due first.
CREATE INDEX messages_claim ON messages (campaign_id, channel, due_at, id) WHERE status = 'Pending';
--bun:split
-- Recovery: Sending messages by the end of their lease.
CREATE INDEX messages_lease ON messages (lease_until) WHERE status = 'Sending';
--bun:split
-- GET /messages by phone number, and by external user id.
CREATE INDEX messages_phone ON messages (company_id, phone, created_at);
--bun:split
CREATE INDEX messages_external ON messages (company_id, external_user_id, created_at) WHERE external_user_id <> '';
--bun:split
-- Delivery reports name the provider's message id.
CREATE INDEX messages_provider ON messages (provider_message_id) WHERE provider_message_id IS NOT NULL;
--bun:split
CREATE TABLE survey_results (
	id               BLOB PRIMARY KEY NOT NULL,
	company_id       BLOB NOT NULL,
	campaign_id      BLOB NOT NULL,
	message_id       BLOB NOT NULL,
	phone            TEXT NOT NULL,
	external_user_id TEXT NOT NULL DEFAULT '',
	option_index     INTEGER NOT NULL,
	option_text      TEXT NOT NULL DEFAULT '',
	tracking_data    TEXT NOT NULL DEFAULT '',
	responded_at     INTEGER NOT NULL,
	CONSTRAINT survey_results_message UNIQUE (message_id)
);
--bun:split
CREATE INDEX survey_results_campaign ON survey_results (campaign_id, responded_at, id);
