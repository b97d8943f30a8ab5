-- A chat service names its provider and channel, may name the provider's
-- endpoint, and keeps the provider's credentials (a JSON object, sealed
-- with the secret key; empty: none).
ALTER TABLE chat_services ADD COLUMN provider text NOT NULL DEFAULT 'herald';
--bun:split
ALTER TABLE chat_services ADD COLUMN channel text NOT NULL DEFAULT 'viber';
--bun:split
ALTER TABLE chat_services ADD COLUMN base_url text NOT NULL DEFAULT '';
--bun:split
ALTER TABLE chat_services ADD COLUMN credentials text NOT NULL DEFAULT '';
