-- Claims name the process that holds them, and processes write heartbeats:
-- the claims of a process whose heartbeat stopped are taken back within
-- seconds, and a restarted process takes back its own at once.
ALTER TABLE messages ADD COLUMN claimed_by TEXT;
--bun:split
CREATE TABLE claimers (
	name         TEXT PRIMARY KEY NOT NULL,
	heartbeat_at INTEGER NOT NULL
) WITHOUT ROWID;
