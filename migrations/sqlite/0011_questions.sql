-- `ask_user`: a question parks a turn like an approval does. kind is 'tool' (an approval of a
-- tool call) or 'question'; options is a JSON array of the offered answers (NULL for tools);
-- answer is what the person answered (a clicked option or a typed reply).
ALTER TABLE approvals ADD COLUMN kind TEXT NOT NULL DEFAULT 'tool';
ALTER TABLE approvals ADD COLUMN options TEXT;
ALTER TABLE approvals ADD COLUMN answer TEXT;
