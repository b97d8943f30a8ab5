-- The sweep of expired messages: Pending messages with an expiry of their
-- own, by it; campaigns with a validity.
CREATE INDEX messages_expiry ON messages (expires_at) WHERE status = 'Pending' AND expires_at IS NOT NULL;
CREATE INDEX campaigns_validity ON campaigns (status) WHERE valid_for > 0;
