-- Idempotency keys: per company, the hash of the first request made with
-- a key and, once it finished, its answer (replayed to a retry).
CREATE TABLE idempotency_keys (
	company_id   BLOB NOT NULL,
	idem_key     TEXT NOT NULL,
	hash         BLOB NOT NULL,
	done         INTEGER NOT NULL DEFAULT 0,
	status       INTEGER NOT NULL DEFAULT 0,
	content_type TEXT NOT NULL DEFAULT '',
	body         BLOB,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL,
	PRIMARY KEY (company_id, idem_key)
);

-- Keys past their window are purged oldest first.
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
