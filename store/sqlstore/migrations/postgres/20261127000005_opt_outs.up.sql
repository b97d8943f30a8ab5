-- Numbers that asked a company to stop: scope All (SMS and chat) or Chat
-- (chat only); source api, keyword or chat.
CREATE TABLE opt_outs (
	company_id uuid NOT NULL,
	phone      text NOT NULL,
	scope      text NOT NULL,
	source     text NOT NULL,
	created_at timestamptz NOT NULL,
	PRIMARY KEY (company_id, phone, scope)
);
--bun:split
-- A company's list, latest first.
CREATE INDEX opt_outs_created ON opt_outs (company_id, created_at);
