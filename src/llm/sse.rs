//! A small incremental parser for Server-Sent Events (the WHATWG `text/event-stream` format).
//!
//! Bytes may be fed in pieces split anywhere (inside a line, inside a UTF-8 character, between
//! `\r` and `\n`); the parser yields each complete event once. It understands `event:` and
//! `data:` fields (several `data:` lines join with `\n`), comment lines (`:`), LF, CRLF and lone
//! CR line ends, and ignores `id:`, `retry:` and unknown fields. It knows nothing about any
//! provider's JSON, and must never allocate more than the bytes of one unfinished line plus the
//! event being built.

/// One dispatched event: its `event:` name (empty when none was given) and its joined data.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
}

/// Incremental SSE parser. Feed bytes with [`SseParser::feed`]; call [`SseParser::finish`] at
/// the end of the body to flush an event that was not followed by a blank line.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the line being read (no terminator yet).
    line: Vec<u8>,
    /// The previous chunk ended with `\r`: a `\n` starting the next chunk belongs to it.
    after_cr: bool,
    event: String,
    data: String,
    has_data: bool,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses `chunk` and appends every event it completes to `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) {
        let mut rest = chunk;
        // An empty chunk between `\r` and `\n` keeps the pair one line end (found by fuzzing,
        // fuzz/regressions/sse_openai/).
        if self.after_cr && !rest.is_empty() {
            self.after_cr = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while let Some(pos) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            let terminator = rest[pos];
            if self.line.is_empty() {
                self.take_line(&rest[..pos], out);
            } else {
                self.line.extend_from_slice(&rest[..pos]);
                let line = std::mem::take(&mut self.line);
                self.take_line(&line, out);
                self.line = line;
                self.line.clear();
            }
            rest = &rest[pos + 1..];
            if terminator == b'\r' {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.line.extend_from_slice(rest);
    }

    /// The body ended: handles a last line without terminator and dispatches a pending event.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.take_line(&line, out);
        }
        self.after_cr = false;
        self.dispatch(out);
    }

    /// Convenience for whole bodies: every event in `body`, including an unterminated last one.
    pub fn parse_all(body: &[u8]) -> Vec<SseEvent> {
        let mut parser = Self::new();
        let mut out = Vec::new();
        parser.feed(body, &mut out);
        parser.finish(&mut out);
        out
    }

    fn take_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                self.event.push_str(&String::from_utf8_lossy(value));
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if self.has_data {
            out.push(SseEvent { event: std::mem::take(&mut self.event), data: std::mem::take(&mut self.data) });
        } else {
            self.event.clear();
        }
        self.has_data = false;
    }
}
