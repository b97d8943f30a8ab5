-- Delivery: chat sequence numbers and SMS parts with their receipts.
-- A chat message's seq, assigned when it is first claimed and kept for
-- every retry.
ALTER TABLE messages ADD COLUMN chat_seq INTEGER;
--bun:split
-- Named counters. chat_seq starts at the time the schema is created, in
-- microseconds since the epoch, so that a new database does not reuse the
-- numbers a provider saw from an earlier one.
CREATE TABLE counters (
	name  TEXT PRIMARY KEY NOT NULL,
	value INTEGER NOT NULL
) WITHOUT ROWID;
--bun:split
INSERT INTO counters (name, value) VALUES ('chat_seq', CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER));
--bun:split
-- One row per SMS part handed to the SMSC, by the provider's part id,
-- written when its message goes Sent; or a receipt that came before its
-- part was recorded (message_id NULL). state is the part's final receipt
-- state (DELIVRD, UNDELIV, ...), NULL while none came.
CREATE TABLE sms_parts (
	provider_id TEXT PRIMARY KEY NOT NULL,
	message_id  BLOB,
	part_index  INTEGER NOT NULL DEFAULT 0,
	part_count  INTEGER NOT NULL DEFAULT 0,
	state       TEXT,
	err         TEXT NOT NULL DEFAULT '',
	done_at     INTEGER,
	created_at  INTEGER NOT NULL
) WITHOUT ROWID;
--bun:split
-- The other parts of a long message.
CREATE INDEX sms_parts_message ON sms_parts (message_id) WHERE part_count > 1;
--bun:split
-- Purging old parts and receipts.
CREATE INDEX sms_parts_created ON sms_parts (created_at);
