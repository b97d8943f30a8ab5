-- A message.status event is written with the status only (data
-- {"status": ...}, render true) and described from its message's row
-- when it is read to be sent: the writing transaction, which delivery
-- waits for, stays small.
ALTER TABLE webhook_events ADD COLUMN render boolean NOT NULL DEFAULT false;
