-- SMS people send to the senders. A message in several parts waits in
-- inbound_parts until it has them all; then it is written to
-- inbound_messages and its parts dropped. company_id is the company whose
-- approved sender the message went to, NULL when none.
CREATE TABLE inbound_parts (
	phone       TEXT NOT NULL,
	dest        TEXT NOT NULL,
	ref         INTEGER NOT NULL,
	count       INTEGER NOT NULL,
	seq         INTEGER NOT NULL,
	text        TEXT NOT NULL,
	received_at INTEGER NOT NULL,
	PRIMARY KEY (phone, dest, ref, count, seq)
);
--bun:split
CREATE TABLE inbound_messages (
	id          BLOB PRIMARY KEY NOT NULL,
	company_id  BLOB,
	phone       TEXT NOT NULL,
	dest        TEXT NOT NULL,
	text        TEXT NOT NULL,
	parts       INTEGER NOT NULL,
	received_at INTEGER NOT NULL
);
--bun:split
-- A company's inbound messages, latest first (ids are time-ordered), and
-- those of one number.
CREATE INDEX inbound_messages_company ON inbound_messages (company_id, id);
--bun:split
CREATE INDEX inbound_messages_phone ON inbound_messages (company_id, phone, id);
