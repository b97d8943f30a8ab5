-- Idempotency keys: per company, the hash of the first request made with
-- a key and, once it finished, its answer (replayed to a retry).
CREATE TABLE idempotency_keys (
	company_id   uuid NOT NULL,
	idem_key     TEXT NOT NULL,
	hash         bytea NOT NULL,
	done         integer NOT NULL DEFAULT 0,
	status       integer NOT NULL DEFAULT 0,
	content_type TEXT NOT NULL DEFAULT '',
	body         bytea,
	created_at   timestamptz NOT NULL,
	updated_at   timestamptz NOT NULL,
	PRIMARY KEY (company_id, idem_key)
);

-- Keys past their window are purged oldest first.
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
