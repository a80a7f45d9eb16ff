-- Approvals show what will happen (issue 30, point 5): what exactly the call would do, secrets
-- masked (the content of a write, the diff of an edit, the whole command, the request, the
-- arguments). `detail_kind` is 'content', 'diff', 'command', 'request' or 'arguments'; both are
-- NULL for questions, for tools that give no more than their summary, and for older rows.
ALTER TABLE approvals ADD COLUMN detail_kind TEXT;
ALTER TABLE approvals ADD COLUMN detail TEXT;
