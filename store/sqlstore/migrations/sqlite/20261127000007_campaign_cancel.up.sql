-- When a campaign was cancelled (it is Completed then, its messages not
-- yet handed to a provider Failed with details CANCELLED).
ALTER TABLE campaigns ADD COLUMN cancelled_at INTEGER;
