-- The SMPP connector an SMS went through, when the sender routes among
-- several (NULL otherwise).
ALTER TABLE messages ADD COLUMN route TEXT;
