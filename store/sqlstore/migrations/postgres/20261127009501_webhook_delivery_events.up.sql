-- A delivery of an endpoint taking batches holds the events one
-- transaction wrote for it, up to its batch size: one row, sent and
-- recorded as one. event_ids lists its events in order, 32 hex digits
-- each, event_id being the first; events counts them. A delivery of one
-- event keeps event_ids empty and events 1, as every row written before.
ALTER TABLE webhook_deliveries ADD COLUMN event_ids text NOT NULL DEFAULT '';
--bun:split
ALTER TABLE webhook_deliveries ADD COLUMN events integer NOT NULL DEFAULT 1;
