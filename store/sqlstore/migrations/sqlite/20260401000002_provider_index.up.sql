-- Delivery receipts find their message through sms_parts: the index of
-- messages by provider message id has no reader left, and every Sent paid
-- for it.
DROP INDEX messages_provider;
