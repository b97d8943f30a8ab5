-- How fast each company's pending count drains: the messages that left it
-- in the current ten-second bucket (drain_cur, drain_bucket numbering it
-- as Unix seconds / 10) and in the one before (drain_prev). A 429 tells
-- from them when capacity frees up.
ALTER TABLE companies ADD COLUMN drain_bucket INTEGER NOT NULL DEFAULT 0;
ALTER TABLE companies ADD COLUMN drain_cur INTEGER NOT NULL DEFAULT 0;
ALTER TABLE companies ADD COLUMN drain_prev INTEGER NOT NULL DEFAULT 0;
