-- One insert of insertcost.sql into the table named by :tbl, rolled back.
CREATE TEMP TABLE before AS SELECT indexrelname::text AS name, idx_blks_read AS r, idx_blks_hit AS h FROM pg_statio_user_indexes;
CHECKPOINT;
BEGIN;
EXPLAIN (ANALYZE, BUFFERS, WAL, COSTS off) INSERT INTO :tbl (id, company_id, campaign_id, due_at, created_at, updated_at, channel, status, phone,
	external_user_id, content)
SELECT (lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0') || '7' || substr(md5(random()::text), 1, 19))::uuid,
	company_id, gen_random_uuid(), now(), now(), now(), 'Smpp', 'Pending', phone, external_user_id, content FROM bulk;
ROLLBACK;
-- Statistics reach the views within a second.
SELECT pg_sleep(1);
SELECT s.indexrelname AS index, s.idx_blks_read - b.r AS pages_read, s.idx_blks_hit - b.h AS pages_hit
	FROM pg_statio_user_indexes s JOIN before b ON b.name = s.indexrelname::text
	WHERE s.idx_blks_read - b.r + s.idx_blks_hit - b.h > 0 ORDER BY 1;
DROP TABLE before;
