-- Dead letters counted and listed through an index of their own (`butler doctor`, the status
-- command), as pending and processing events already are, instead of reading the whole inbox.
CREATE INDEX inbox_failed ON inbox (seq) WHERE status = 'failed';
