-- API keys are looked up by their selector (the public part that follows
-- the om_ prefix) and checked against the hash of the whole key. Keys
-- issued before this migration have no selector and must be issued again.
ALTER TABLE companies ADD COLUMN api_key_selector text;
--bun:split
UPDATE companies SET api_key_hash = NULL;
--bun:split
CREATE UNIQUE INDEX companies_api_key_selector ON companies (api_key_selector);
