-- An API key may expire: a new key gives the company's other keys a grace
-- period, after which they stop authenticating. NULL: no expiry.
ALTER TABLE api_keys ADD COLUMN expires_at timestamptz;
