-- Validity: when a message stops being worth sending (a transactional
-- message's, or a fallback SMS's inherited one); how long a bulk or direct
-- campaign's messages stay valid from its start (seconds, 0: no limit);
-- a template's default validity (seconds, 0: none).
ALTER TABLE messages ADD COLUMN expires_at timestamptz;
ALTER TABLE campaigns ADD COLUMN valid_for INTEGER NOT NULL DEFAULT 0;
ALTER TABLE templates ADD COLUMN validity_period INTEGER NOT NULL DEFAULT 0;
