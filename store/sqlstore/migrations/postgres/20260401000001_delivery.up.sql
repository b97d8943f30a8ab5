-- Delivery: chat sequence numbers and SMS parts with their receipts.
-- A chat message's seq, assigned when it is first claimed and kept for
-- every retry.
ALTER TABLE messages ADD COLUMN chat_seq bigint;
--bun:split
-- Starts at the time the schema is created, in microseconds since the
-- epoch, so that a new database does not reuse the numbers a provider saw
-- from an earlier one.
CREATE SEQUENCE chat_seq;
--bun:split
SELECT setval('chat_seq', (extract(epoch FROM clock_timestamp()) * 1000000)::bigint);
--bun:split
-- One row per SMS part handed to the SMSC, by the provider's part id,
-- written when its message goes Sent; or a receipt that came before its
-- part was recorded (message_id NULL). state is the part's final receipt
-- state (DELIVRD, UNDELIV, ...), NULL while none came.
CREATE TABLE sms_parts (
	provider_id text COLLATE "C" PRIMARY KEY,
	message_id  uuid,
	created_at  timestamptz NOT NULL,
	done_at     timestamptz,
	part_index  integer NOT NULL DEFAULT 0,
	part_count  integer NOT NULL DEFAULT 0,
	state       text,
	err         text NOT NULL DEFAULT ''
);
--bun:split
-- The other parts of a long message.
CREATE INDEX sms_parts_message ON sms_parts (message_id) WHERE part_count > 1;
--bun:split
-- Purging old parts and receipts.
CREATE INDEX sms_parts_created ON sms_parts (created_at);
