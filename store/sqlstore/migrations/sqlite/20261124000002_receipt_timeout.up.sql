-- Sent SMS whose delivery receipt did not come within the receipt
-- timeout: still Sent, no longer waited for. Campaigns count them (a part
-- of sent and fb_sent).
ALTER TABLE messages ADD COLUMN unconfirmed INTEGER NOT NULL DEFAULT 0;
--bun:split
ALTER TABLE campaigns ADD COLUMN unconfirmed INTEGER NOT NULL DEFAULT 0;
--bun:split
ALTER TABLE campaigns ADD COLUMN fb_unconfirmed INTEGER NOT NULL DEFAULT 0;
--bun:split
-- How far periodic sweeps have gone: the receipt timeout looks at the SMS
-- parts recorded since the last sweep only.
CREATE TABLE sweeps (
	name TEXT PRIMARY KEY NOT NULL,
	upto INTEGER NOT NULL
) WITHOUT ROWID;
