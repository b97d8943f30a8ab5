-- A bulk campaign's send window (quiet hours outside it): minutes after
-- midnight, in the recipient's time or in window_tz when set; NULL when
-- the campaign has none.
ALTER TABLE campaigns ADD COLUMN window_from integer;
ALTER TABLE campaigns ADD COLUMN window_to integer;
ALTER TABLE campaigns ADD COLUMN window_tz TEXT NOT NULL DEFAULT '';
