-- A file an outbox message carries (send_file): the JSON of butler_channel::OutFile (a copy of
-- the file kept under the data dir until the message is delivered), NULL for text messages.
ALTER TABLE outbox ADD COLUMN file TEXT;
