//! What the bodies share: the shape of an HTTP request in a fuzz input, deterministic ways to cut
//! a body into pieces, one small tokio runtime, a scratch folder, and the invariants every
//! inbound event must keep.
//!
//! Nothing here may depend on the clock or on anything a previous input left behind: an input
//! must do the same thing every time it is replayed.

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use butler_channel::InboundEvent;
use std::future::Future;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The receiver's clock for every signature and freshness check (Unix seconds).
pub const NOW_SECS: i64 = 1_750_000_000;
/// The same instant in milliseconds.
pub const NOW_MS: i64 = NOW_SECS * 1000;
/// The name of the runtime's blocking threads (see [`contain_pool_panics`]).
pub const POOL_THREAD: &str = "butler-fuzz-pool";

/// An HTTP request as a fuzz input: `H\n`, then header lines `name: value\n` up to an empty line,
/// then the body. Without the `H\n` prefix the whole input is the body and there are no headers
/// (the targets then add what a well-behaved sender sends: a valid signature, a JSON type).
pub struct Request<'a> {
    pub headers: Option<HeaderMap>,
    pub body: &'a [u8],
}

/// Splits `data` into a [`Request`]. Header lines that are not valid HTTP are left out.
pub fn request(data: &[u8]) -> Request<'_> {
    let Some(rest) = data.strip_prefix(b"H\n") else {
        return Request { headers: None, body: data };
    };
    let mut headers = HeaderMap::new();
    let mut at = 0;
    while at < rest.len() {
        let end = rest[at..].iter().position(|&b| b == b'\n').map_or(rest.len(), |p| at + p);
        let line = &rest[at..end];
        at = (end + 1).min(rest.len());
        if line.is_empty() {
            break;
        }
        let Some(colon) = line.iter().position(|&b| b == b':') else { continue };
        let value = line[colon + 1..].strip_prefix(b" ").unwrap_or(&line[colon + 1..]);
        if let (Ok(name), Ok(value)) = (HeaderName::from_bytes(&line[..colon]), HeaderValue::from_bytes(value)) {
            headers.append(name, value);
        }
    }
    Request { headers: Some(headers), body: &rest[at..] }
}

/// The headers of `req` (empty when it has none) with `extra` added where `req` does not set
/// them; `extra` is only asked for when something is missing.
pub fn headers_with(req: &Request<'_>, extra: impl FnOnce(&HeaderMap) -> Vec<(&'static str, String)>) -> HeaderMap {
    let mut headers = req.headers.clone().unwrap_or_default();
    for (name, value) in extra(&headers) {
        if headers.contains_key(name) {
            continue;
        }
        if let Ok(v) = HeaderValue::from_str(&value) {
            headers.insert(name, v);
        }
    }
    headers
}

/// A header's text, if it has one.
pub fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Ways to cut `data` into pieces, each a list of pieces whose concatenation is `data`: whole,
/// byte by byte, and at two places that depend on the bytes themselves.
pub fn cuts(data: &[u8]) -> Vec<Vec<&[u8]>> {
    let mut out = vec![vec![data], data.chunks(1).collect()];
    if data.len() > 2 {
        let seed = data.iter().fold(7usize, |h, &b| h.wrapping_mul(31).wrapping_add(usize::from(b)));
        let a = seed % data.len();
        let b = a + (seed / 7) % (data.len() - a);
        out.push(vec![&data[..a], &data[a..b], &data[b..]]);
    }
    out
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .thread_name(POOL_THREAD)
            .build()
            .expect("a tokio runtime")
    })
}

/// Runs `fut` to its end on the shared current-thread runtime (blocking work goes to its pool).
pub fn block_on<F: Future>(fut: F) -> F::Output {
    runtime().block_on(fut)
}

/// This process's scratch folder, `butler-fuzz-<pid>` under `/dev/shm` when there is one (see
/// [`scratch`]); whoever ran the bodies may remove it at the end.
pub fn scratch_root() -> PathBuf {
    let base = if std::path::Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
    base.join(format!("butler-fuzz-{}", std::process::id()))
}

/// A folder of this process for `what` (inside [`scratch_root`]), created empty.
pub fn scratch(what: &str) -> PathBuf {
    let dir = scratch_root().join(what);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    dir
}

/// Under libFuzzer a panic aborts at once, also one that Butler contains: the media code decodes
/// on the blocking pool, and a panic of a decoder there becomes an "unreadable file" answer. From
/// this call on, a panic on the pool's threads goes to `report` and unwinds as it does in Butler;
/// every other panic still goes to the hook that was there (libFuzzer's, which aborts).
pub fn contain_pool_panics(report: fn(&std::panic::PanicHookInfo<'_>)) {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().name() == Some(POOL_THREAD) {
            report(info);
        } else {
            previous(info);
        }
    }));
}

/// The invariants of an event a channel hands to the ingress: its id and its parts name the
/// channel, and once made storable (as the ingress does) it is stored as JSON and read back the
/// same (the inbox keeps events as JSON, and a row that cannot be read back stays stuck).
pub fn check_event(ev: &InboundEvent, channel: &str) {
    let prefix = format!("{channel}:");
    assert!(ev.id.0.starts_with(&prefix), "event id {:?} does not start with {prefix}", ev.id.0);
    assert_eq!(ev.actor.identity.channel, channel, "actor of {:?}", ev.id.0);
    assert_eq!(ev.conversation.channel, channel, "conversation of {:?}", ev.id.0);
    let mut stored = ev.clone();
    stored.make_storable();
    let json = serde_json::to_string(&stored).expect("an event serializes");
    let back: InboundEvent = match serde_json::from_str(&json) {
        Ok(back) => back,
        Err(e) => panic!("the event {json} cannot be read back: {e}"),
    };
    // Names are written as text (`channel:id/thread`): compared as parts, not as their text.
    assert_eq!(back.actor.identity, stored.actor.identity, "the sender reads back as another from {json}");
    assert_eq!(back.conversation, stored.conversation, "the conversation reads back as another from {json}");
    let (a, b) = (serde_json::to_value(&back).expect("json"), serde_json::to_value(&stored).expect("json"));
    assert!(same(&a, &b), "the event reads back changed:\n{a}\nfrom\n{b}");
}

/// JSON equality, but a float only needs to come back within a rounding error: serde_json
/// (without `float_roundtrip`) may read a printed float back one unit in the last place off.
fn same(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            let (x, y) = (x.as_f64().unwrap_or(f64::NAN), y.as_f64().unwrap_or(f64::NAN));
            x == y || (x - y).abs() <= f64::EPSILON * 4.0 * x.abs().max(y.abs())
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}
