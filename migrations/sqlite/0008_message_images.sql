-- Images a tool returned (an MCP server's screenshot, say), as a JSON array of
-- {"mime", "data"} with base64 data; NULL when there are none.
ALTER TABLE messages ADD COLUMN images TEXT;
