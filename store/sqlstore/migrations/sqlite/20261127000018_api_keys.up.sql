-- Several API keys a company, each with a name; the company's single key
-- moves here as "default" (the columns on companies stay, empty).
CREATE TABLE api_keys (
	id           INTEGER PRIMARY KEY AUTOINCREMENT,
	company_id   BLOB NOT NULL,
	name         TEXT NOT NULL,
	selector     TEXT NOT NULL UNIQUE,
	hash         BLOB NOT NULL,
	created_at   INTEGER NOT NULL,
	last_used_at INTEGER
);
--bun:split
CREATE INDEX api_keys_company ON api_keys (company_id, id);
--bun:split
INSERT INTO api_keys (company_id, name, selector, hash, created_at)
	SELECT id, 'default', api_key_selector, api_key_hash, created_at FROM companies
	WHERE api_key_selector IS NOT NULL AND api_key_hash IS NOT NULL;
--bun:split
UPDATE companies SET api_key_selector = NULL, api_key_hash = NULL;
--bun:split
-- Company names are unique, compared trimmed and lower-cased (name_key):
-- a later company with the name of an earlier one gets its id appended.
ALTER TABLE companies ADD COLUMN name_key TEXT;
--bun:split
UPDATE companies SET name = name || ' (' || lower(hex(id)) || ')' WHERE EXISTS (
	SELECT 1 FROM companies d WHERE lower(trim(d.name)) = lower(trim(companies.name))
	AND (d.created_at < companies.created_at OR (d.created_at = companies.created_at AND d.id < companies.id)));
--bun:split
UPDATE companies SET name_key = lower(trim(name));
--bun:split
CREATE UNIQUE INDEX companies_name_key ON companies (name_key);
