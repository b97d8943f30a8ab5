-- A company's own opt-out and opt-in keywords, comma-separated, upper
-- case; a company without a row uses the defaults.
CREATE TABLE opt_out_keywords (
	company_id uuid PRIMARY KEY,
	out_words  text NOT NULL,
	in_words   text NOT NULL
);
