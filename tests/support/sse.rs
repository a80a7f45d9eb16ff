//! Reading a server-sent event stream in tests: complete events are taken out of a buffer of
//! received text as (event name, JSON data); a partial event stays for the next chunk.

use serde_json::Value;

/// Takes every complete event (`event:` and `data:` lines ending with a blank line) out of
/// `buf`; events whose data is not JSON are skipped.
pub fn drain_events(buf: &mut String) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    while let Some(end) = buf.find("\n\n") {
        let block: String = buf.drain(..end + 2).collect();
        let kind = block.lines().find_map(|l| l.strip_prefix("event: ")).unwrap_or("").to_string();
        let data: String = block.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
        if let Ok(v) = serde_json::from_str(&data) {
            out.push((kind, v));
        }
    }
    out
}
