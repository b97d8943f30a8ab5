-- SMS people send to the senders. A message in several parts waits in
-- inbound_parts until it has them all; then it is written to
-- inbound_messages and its parts dropped. company_id is the company whose
-- approved sender the message went to, NULL when none.
CREATE TABLE inbound_parts (
	phone       text NOT NULL,
	dest        text NOT NULL,
	ref         integer NOT NULL,
	count       integer NOT NULL,
	seq         integer NOT NULL,
	text        text NOT NULL,
	received_at timestamptz NOT NULL,
	PRIMARY KEY (phone, dest, ref, count, seq)
);
--bun:split
CREATE TABLE inbound_messages (
	id          uuid PRIMARY KEY,
	company_id  uuid,
	phone       text NOT NULL,
	dest        text NOT NULL,
	text        text NOT NULL,
	parts       integer NOT NULL,
	received_at timestamptz NOT NULL
);
--bun:split
-- A company's inbound messages, latest first (ids are time-ordered), and
-- those of one number.
CREATE INDEX inbound_messages_company ON inbound_messages (company_id, id);
--bun:split
CREATE INDEX inbound_messages_phone ON inbound_messages (company_id, phone, id);
