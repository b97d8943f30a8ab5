-- A company's own opt-out and opt-in keywords, comma-separated, upper
-- case; a company without a row uses the defaults.
CREATE TABLE opt_out_keywords (
	company_id BLOB PRIMARY KEY NOT NULL,
	out_words  TEXT NOT NULL,
	in_words   TEXT NOT NULL
);
