-- A row of webhook_events may hold several events of one write, packed
-- (events > 1): those of a company whose endpoints all take batches. Its
-- id, type, subject and time are its first event's; data holds every
-- event, each with its id (see packEvents). Rows written before hold one
-- event each, as events 1 says.
ALTER TABLE webhook_events ADD COLUMN events INTEGER NOT NULL DEFAULT 1;
