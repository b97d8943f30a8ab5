-- When a Ready campaign starts by itself (POST /campaigns/{id}/start with
-- sendAt). The scheduler finds the due ones through the partial index.
ALTER TABLE campaigns ADD COLUMN scheduled_at timestamptz;

CREATE INDEX campaigns_scheduled ON campaigns (scheduled_at) WHERE status = 'Ready' AND scheduled_at IS NOT NULL;
