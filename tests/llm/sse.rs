//! The SSE parser on its own: line ends, multi-line data, comments, and chunk boundaries
//! anywhere (every split point of every case). Must never depend on a provider.

use butler::llm::{SseEvent, SseParser};

fn ev(event: &str, data: &str) -> SseEvent {
    SseEvent { event: event.into(), data: data.into() }
}

/// (name, input, expected events)
fn cases() -> Vec<(&'static str, &'static [u8], Vec<SseEvent>)> {
    vec![
        ("data only, LF", b"data: hello\n\n", vec![ev("", "hello")]),
        ("named event", b"event: ping\ndata: {}\n\n", vec![ev("ping", "{}")]),
        ("CRLF", b"event: a\r\ndata: x\r\n\r\ndata: y\r\n\r\n", vec![ev("a", "x"), ev("", "y")]),
        ("lone CR", b"data: x\r\rdata: y\r\r", vec![ev("", "x"), ev("", "y")]),
        ("multi-line data", b"data: one\ndata: two\ndata:three\n\n", vec![ev("", "one\ntwo\nthree")]),
        ("comments ignored", b": keep-alive\n\n:\ndata: x\n: mid\n\n", vec![ev("", "x")]),
        ("event without data is dropped", b"event: lonely\n\ndata: x\n\n", vec![ev("", "x")]),
        ("id and retry ignored", b"id: 7\nretry: 100\ndata: x\n\n", vec![ev("", "x")]),
        ("field without colon", b"data\n\n", vec![ev("", "")]),
        ("only one leading space stripped", b"data:  two spaces\n\n", vec![ev("", " two spaces")]),
        ("colon inside value", b"data: {\"a\":\"b:c\"}\n\n", vec![ev("", "{\"a\":\"b:c\"}")]),
        ("utf-8", "data: héllo 🌍\n\n".as_bytes(), vec![ev("", "héllo 🌍")]),
        ("unterminated last event", b"data: a\n\nevent: e\ndata: b", vec![ev("", "a"), ev("e", "b")]),
        ("event name resets", b"event: a\ndata: 1\n\ndata: 2\n\n", vec![ev("a", "1"), ev("", "2")]),
        ("blank lines between", b"\n\n\ndata: x\n\n\n\n", vec![ev("", "x")]),
    ]
}

fn parse_split(input: &[u8], splits: &[usize]) -> Vec<SseEvent> {
    let mut parser = SseParser::new();
    let mut out = Vec::new();
    let mut from = 0;
    for &at in splits {
        parser.feed(&input[from..at], &mut out);
        from = at;
    }
    parser.feed(&input[from..], &mut out);
    parser.finish(&mut out);
    out
}

#[test]
fn sse_cases_whole_and_split_at_every_point() {
    for (name, input, expected) in cases() {
        assert_eq!(SseParser::parse_all(input), expected, "{name}: whole");
        for at in 0..=input.len() {
            assert_eq!(parse_split(input, &[at]), expected, "{name}: split at {at}");
        }
        let every_byte: Vec<usize> = (1..input.len()).collect();
        assert_eq!(parse_split(input, &every_byte), expected, "{name}: 1-byte chunks");
    }
}

#[test]
fn sse_crlf_split_between_cr_and_lf_is_one_line_end() {
    // "\r" ends one chunk, "\n" starts the next: one line end, not an empty line in between.
    let out = parse_split(b"data: a\r\ndata: b\r\n\r\n", &[8]);
    assert_eq!(out, vec![ev("", "a\nb")]);
}

#[test]
fn sse_events_are_yielded_as_soon_as_complete() {
    let mut parser = SseParser::new();
    let mut out = Vec::new();
    parser.feed(b"data: first\n\ndata: sec", &mut out);
    assert_eq!(out, vec![ev("", "first")]);
    parser.feed(b"ond\n\n", &mut out);
    assert_eq!(out, vec![ev("", "first"), ev("", "second")]);
}
