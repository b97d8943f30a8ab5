-- SQLite keeps messages in one table: partitions are Postgres's (see the
-- migration of the same name there). Nothing to do.
SELECT 1;
