-- One process sends to an endpoint at a time (keeping each subject's
-- events in order): the one named by lease_owner, until lease_until.
ALTER TABLE webhook_endpoints ADD COLUMN lease_owner TEXT;
--bun:split
ALTER TABLE webhook_endpoints ADD COLUMN lease_until INTEGER;
