-- The parts of an assembled inbound message are kept for a day, so that a
-- part sent again is recognised: the table holds a day of parts, and the
-- purge of the stale ones finds them through this index.
CREATE INDEX inbound_parts_received ON inbound_parts (received_at);
