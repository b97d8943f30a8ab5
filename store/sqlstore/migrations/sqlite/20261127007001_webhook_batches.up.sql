-- An endpoint may take several events a request: up to batch_max_events
-- (0: one event a request, the body being the event), the oldest waiting
-- at most batch_max_wait_ms for the batch to fill.
ALTER TABLE webhook_endpoints ADD COLUMN batch_max_events INTEGER NOT NULL DEFAULT 0;
--bun:split
ALTER TABLE webhook_endpoints ADD COLUMN batch_max_wait_ms INTEGER NOT NULL DEFAULT 0;
