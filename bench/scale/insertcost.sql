-- insertcost.sql: what one 200,000-message bulk costs Postgres on the
-- database bench/scale filled, against the same insert into an empty
-- table with the same indexes, in one run. It inserts the recipients of
-- the history's second campaign again, as the bulk bench/scale times on
-- the full database does, and rolls both inserts back. For each it prints
-- the statement's buffers and WAL (EXPLAIN ANALYZE) and, per index, the
-- pages read into shared buffers and the pages found there.
--
--   psql -h 127.0.0.1 -U postgres -d herald_scale -f bench/scale/insertcost.sql
--
-- Run it on a database bench/scale left (its fill done); on a partitioned
-- messages table the insert goes to the newest partition.
\set ON_ERROR_STOP on
SELECT id AS c FROM campaigns ORDER BY created_at OFFSET 1 LIMIT 1 \gset
CREATE TEMP TABLE bulk AS SELECT company_id, phone, external_user_id, content FROM messages WHERE campaign_id = :'c' LIMIT 200000;
CREATE TABLE insertcost_empty (LIKE messages INCLUDING ALL);
\set tbl insertcost_empty
\ir insertcost_one.sql
\set tbl messages
\ir insertcost_one.sql
DROP TABLE insertcost_empty;
