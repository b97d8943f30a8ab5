-- Retention: the messages and survey results of a finished campaign are
-- purged in batches once it is old enough. purge_state is 1 while they
-- are being purged and 2 once they are gone (purged_at: when); the
-- campaign's row and counters stay. purge_cursor is the last message id
-- purged, where the next batch starts.
ALTER TABLE campaigns ADD COLUMN purge_state INTEGER NOT NULL DEFAULT 0;
--bun:split
ALTER TABLE campaigns ADD COLUMN purged_at INTEGER;
--bun:split
ALTER TABLE campaigns ADD COLUMN purge_cursor BLOB;
