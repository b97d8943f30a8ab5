-- Messages in partitions by range of id. Ids are UUIDv7, whose first 48
-- bits are the milliseconds of their creation, so a range of ids is a
-- range of time: new messages land in the newest partition, whose indexes
-- stay small, and retention drops a whole old partition at once. The
-- table as it was becomes the first partition, every id up to the next
-- minute, without copying a row: its indexes become the
-- partitions' of the new table's indexes, and attaching it only reads it
-- once to check its ids. The store makes the later partitions ahead of
-- time; the default one takes an id no partition covers, so that an
-- insert never fails.
ALTER TABLE messages RENAME TO messages_p0;
--bun:split
ALTER INDEX messages_pkey RENAME TO messages_p0_pkey;
--bun:split
ALTER INDEX messages_claim_sms RENAME TO messages_p0_claim_sms;
--bun:split
ALTER INDEX messages_claim_chat RENAME TO messages_p0_claim_chat;
--bun:split
ALTER INDEX messages_lease RENAME TO messages_p0_lease;
--bun:split
ALTER INDEX messages_phone RENAME TO messages_p0_phone;
--bun:split
ALTER INDEX messages_external RENAME TO messages_p0_external;
--bun:split
ALTER INDEX messages_expiry RENAME TO messages_p0_expiry;
--bun:split
CREATE TABLE messages (LIKE messages_p0 INCLUDING DEFAULTS) PARTITION BY RANGE (id);
--bun:split
ALTER TABLE messages ADD CONSTRAINT messages_pkey PRIMARY KEY (id);
--bun:split
CREATE INDEX messages_claim_sms ON messages (campaign_id, due_at, id) WHERE status = 'Pending' AND channel = 'Smpp';
--bun:split
CREATE INDEX messages_claim_chat ON messages (campaign_id, due_at, id) WHERE status = 'Pending' AND channel = 'Chat';
--bun:split
CREATE INDEX messages_lease ON messages (lease_until) WHERE status = 'Sending';
--bun:split
CREATE INDEX messages_phone ON messages USING hash (phone);
--bun:split
CREATE INDEX messages_external ON messages USING hash (external_user_id) WHERE external_user_id <> '';
--bun:split
CREATE INDEX messages_expiry ON messages (expires_at) WHERE status = 'Pending' AND expires_at IS NOT NULL;
--bun:split
DO $$
BEGIN
	EXECUTE format('ALTER TABLE messages ATTACH PARTITION messages_p0 FOR VALUES FROM (MINVALUE) TO (%L)',
		(lpad(to_hex((extract(epoch FROM date_trunc('minute', now() AT TIME ZONE 'UTC') + interval '1 minute') * 1000)::bigint), 12, '0')
			|| '00000000000000000000')::uuid);
END
$$;
--bun:split
CREATE TABLE messages_default PARTITION OF messages DEFAULT;
