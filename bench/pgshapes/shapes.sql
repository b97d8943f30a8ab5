-- A diagnostic of Postgres's cost of a message's row writes, in three
-- shapes of the messages table, each on its own 200,000-row copy with the
-- indexes that matter (claim, lease, phone, external id):
--
--   a: today's shape. Claim, Sent and Delivered each change status, which
--      the partial indexes' conditions name, so no update is heap-only.
--   b: status out of every index condition: a queued flag in the claim
--      index, the in-flight claims in a side table; fillfactor :ff_b.
--   c: no claim write: a cursor per campaign and a record per claimed
--      batch; Sent and Delivered may be heap-only; fillfactor :ff_c.
--
-- Each procedure claims 100 messages, marks them Sent, then Delivered,
-- committing after each step, :batches times. Run on an empty database,
-- one backend, nothing else running:
--
--   psql -h 127.0.0.1 -U postgres -d shapes -v batches=1000 -v ff_b=70 -v ff_c=80 -f bench/pgshapes/shapes.sql
--
-- It prints each procedure's time and the share of heap-only updates.
\set ON_ERROR_STOP 1
\pset pager off
DROP TABLE IF EXISTS ma, mb, mc, inflight, cursors, batches;
CREATE TABLE ma (
	id uuid PRIMARY KEY, campaign_id uuid NOT NULL, due_at timestamptz NOT NULL, lease_until timestamptz,
	sent_at timestamptz, delivered_at timestamptz, channel text NOT NULL, status text NOT NULL,
	phone text NOT NULL, external_user_id text NOT NULL, content text NOT NULL, details text NOT NULL DEFAULT '',
	claimed_by text, attempts int NOT NULL DEFAULT 0, queued boolean NOT NULL DEFAULT true);
CREATE TABLE mb (LIKE ma INCLUDING DEFAULTS) WITH (fillfactor = :ff_b);
CREATE TABLE mc (LIKE ma INCLUDING DEFAULTS) WITH (fillfactor = :ff_c);
ALTER TABLE mb ADD PRIMARY KEY (id);
ALTER TABLE mc ADD PRIMARY KEY (id);
CREATE INDEX ma_claim ON ma (campaign_id, due_at, id) WHERE status = 'Pending' AND channel = 'Smpp';
CREATE INDEX ma_lease ON ma (lease_until) WHERE status = 'Sending';
CREATE INDEX mb_claim ON mb (campaign_id, due_at, id) WHERE queued AND channel = 'Smpp';
CREATE INDEX mc_claim ON mc (campaign_id, due_at, id) WHERE channel = 'Smpp';
CREATE INDEX ma_phone ON ma USING hash (phone);
CREATE INDEX mb_phone ON mb USING hash (phone);
CREATE INDEX mc_phone ON mc USING hash (phone);
CREATE INDEX ma_ext ON ma USING hash (external_user_id) WHERE external_user_id <> '';
CREATE INDEX mb_ext ON mb USING hash (external_user_id) WHERE external_user_id <> '';
CREATE INDEX mc_ext ON mc USING hash (external_user_id) WHERE external_user_id <> '';
CREATE TABLE inflight (id uuid PRIMARY KEY, lease_until timestamptz);
CREATE TABLE cursors (campaign_id uuid PRIMARY KEY, due_at timestamptz, id uuid);
CREATE TABLE batches (id bigserial PRIMARY KEY, campaign_id uuid, first_due timestamptz, first_id uuid,
	last_due timestamptz, last_id uuid, owner text, lease_until timestamptz);
INSERT INTO ma SELECT gen_random_uuid(), '00000000-0000-0000-0000-000000000001', now(), NULL, NULL, NULL, 'Smpp',
	'Pending', '+4479' || (10000000 + i)::text, 'user-' || i, repeat('x', 120)
	FROM generate_series(1, 200000) i ORDER BY 1;
INSERT INTO mb SELECT * FROM ma ORDER BY id;
INSERT INTO mc SELECT * FROM ma ORDER BY id;
INSERT INTO cursors VALUES ('00000000-0000-0000-0000-000000000001', '-infinity', '00000000-0000-0000-0000-000000000000');
CHECKPOINT;

CREATE OR REPLACE PROCEDURE run_a(n int) LANGUAGE plpgsql AS $$
DECLARE ids uuid[];
BEGIN
	FOR i IN 1..n LOOP
		WITH p AS (SELECT id FROM ma WHERE campaign_id = '00000000-0000-0000-0000-000000000001' AND channel = 'Smpp'
				AND status = 'Pending' AND due_at <= now() ORDER BY due_at, id LIMIT 100 FOR UPDATE SKIP LOCKED),
			u AS (UPDATE ma SET status = 'Sending', attempts = attempts + 1, lease_until = now() + interval '1 min',
				claimed_by = 'me' FROM p WHERE ma.id = p.id RETURNING ma.id)
		SELECT array_agg(id ORDER BY id) INTO ids FROM u;
		COMMIT;
		PERFORM 1 FROM ma WHERE id = ANY(ids) ORDER BY id FOR UPDATE;
		UPDATE ma SET status = 'Sent', sent_at = now(), lease_until = NULL WHERE id = ANY(ids);
		COMMIT;
		PERFORM 1 FROM ma WHERE id = ANY(ids) ORDER BY id FOR UPDATE;
		UPDATE ma SET status = 'Delivered', delivered_at = now() WHERE id = ANY(ids);
		COMMIT;
	END LOOP;
END $$;

CREATE OR REPLACE PROCEDURE run_b(n int) LANGUAGE plpgsql AS $$
DECLARE ids uuid[];
BEGIN
	FOR i IN 1..n LOOP
		WITH p AS (SELECT id FROM mb WHERE campaign_id = '00000000-0000-0000-0000-000000000001' AND channel = 'Smpp'
				AND queued AND due_at <= now() ORDER BY due_at, id LIMIT 100 FOR UPDATE SKIP LOCKED),
			u AS (UPDATE mb SET queued = false, status = 'Sending', attempts = attempts + 1,
				lease_until = now() + interval '1 min', claimed_by = 'me' FROM p WHERE mb.id = p.id RETURNING mb.id)
		SELECT array_agg(id ORDER BY id) INTO ids FROM u;
		INSERT INTO inflight SELECT unnest(ids), now();
		COMMIT;
		PERFORM 1 FROM mb WHERE id = ANY(ids) ORDER BY id FOR UPDATE;
		UPDATE mb SET status = 'Sent', sent_at = now() WHERE id = ANY(ids);
		DELETE FROM inflight WHERE id = ANY(ids);
		COMMIT;
		PERFORM 1 FROM mb WHERE id = ANY(ids) ORDER BY id FOR UPDATE;
		UPDATE mb SET status = 'Delivered', delivered_at = now() WHERE id = ANY(ids);
		COMMIT;
	END LOOP;
END $$;

CREATE OR REPLACE PROCEDURE run_c(n int) LANGUAGE plpgsql AS $$
DECLARE ids uuid[]; cd timestamptz; ci uuid; ld timestamptz; li uuid;
BEGIN
	FOR i IN 1..n LOOP
		SELECT due_at, id INTO cd, ci FROM cursors WHERE campaign_id = '00000000-0000-0000-0000-000000000001' FOR UPDATE;
		SELECT array_agg(id ORDER BY due_at, id), max(due_at) INTO ids, ld FROM (
			SELECT id, due_at FROM mc WHERE campaign_id = '00000000-0000-0000-0000-000000000001' AND channel = 'Smpp'
				AND (due_at, id) > (cd, ci) AND due_at <= now() ORDER BY due_at, id LIMIT 100) p;
		li := ids[array_length(ids, 1)];
		UPDATE cursors SET due_at = ld, id = li WHERE campaign_id = '00000000-0000-0000-0000-000000000001';
		INSERT INTO batches (campaign_id, first_due, first_id, last_due, last_id, owner, lease_until)
			VALUES ('00000000-0000-0000-0000-000000000001', cd, ci, ld, li, 'me', now() + interval '1 min');
		PERFORM content, phone FROM mc WHERE id = ANY(ids);
		COMMIT;
		PERFORM 1 FROM mc WHERE id = ANY(ids) ORDER BY id FOR UPDATE;
		UPDATE mc SET status = 'Sent', sent_at = now(), attempts = attempts + 1 WHERE id = ANY(ids);
		COMMIT;
		PERFORM 1 FROM mc WHERE id = ANY(ids) ORDER BY id FOR UPDATE;
		UPDATE mc SET status = 'Delivered', delivered_at = now() WHERE id = ANY(ids);
		COMMIT;
	END LOOP;
END $$;

SET synchronous_commit = off;
\timing on
CALL run_a(:batches);
CALL run_b(:batches);
CALL run_c(:batches);
\timing off
SELECT pg_stat_force_next_flush();
SELECT relname, n_tup_upd, n_tup_hot_upd, round(100.0 * n_tup_hot_upd / nullif(n_tup_upd, 0)) AS hot_pct,
	pg_size_pretty(pg_relation_size(relid)) AS heap
	FROM pg_stat_user_tables WHERE relname IN ('ma', 'mb', 'mc') ORDER BY relname;
DROP TABLE ma, mb, mc, inflight, cursors, batches;
DROP PROCEDURE run_a, run_b, run_c;
