-- A company's cap on messages handed to a provider a second, for every
-- herald process together; 0: none.
ALTER TABLE companies ADD COLUMN max_per_second REAL NOT NULL DEFAULT 0;
