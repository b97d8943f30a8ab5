-- Claims name the process that holds them, and processes write heartbeats:
-- the claims of a process whose heartbeat stopped are taken back within
-- seconds, and a restarted process takes back its own at once.
ALTER TABLE messages ADD COLUMN claimed_by text;
--bun:split
CREATE TABLE claimers (
	name         text PRIMARY KEY,
	heartbeat_at timestamptz NOT NULL
);
