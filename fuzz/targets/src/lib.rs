//! The bodies of Butler's fuzz targets: what each target does with the bytes it is given, and
//! the invariants it asserts on the way (beyond "a malformed input is an error, never a panic"):
//! signatures made with the right secret pass and others do not, events read back from the
//! inbox unchanged, decoders give the same answer however the bytes are cut, files stay within
//! the media limits. A failed invariant is a panic.
//!
//! The same bodies run under libFuzzer (`fuzz/fuzz_targets/<name>.rs`, built and run by
//! `fuzz/run`) and in the normal test run (`tests/corpus.rs` replays `fuzz/corpus/<name>/` and
//! `fuzz/regressions/<name>/`). The targets are listed once, in `fuzz/targets.txt`.
//!
//! A body must never print, reach the network (beyond one refused local connection for voice
//! notes), write outside its scratch folder, or let one input change what the next one does.

mod alloc;
mod chat;
mod discord;
pub mod harness;
mod llm;
mod mcp;
mod media;
mod settings;
mod slack;
mod web;

/// `fuzz/targets.txt`: one line per target.
pub const TABLE: &str = include_str!("../../targets.txt");

/// One line of [`TABLE`]: the target's name, its libFuzzer limits and what it drives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub name: &'static str,
    pub max_len: usize,
    pub timeout_secs: u32,
    pub rss_mb: u32,
    pub what: String,
}

/// The targets of [`TABLE`], in its order. Panics on a malformed line (the corpus test reads it).
pub fn targets() -> Vec<Target> {
    TABLE
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|line| {
            let mut fields = line.split_whitespace();
            let mut next = |what: &str| fields.next().unwrap_or_else(|| panic!("targets.txt: no {what} in `{line}`"));
            let name = next("name");
            let number =
                |s: &str| s.parse().unwrap_or_else(|_| panic!("targets.txt: `{s}` is not a number in `{line}`"));
            let (max_len, timeout, rss) = (number(next("max_len")), number(next("timeout")), number(next("rss_mb")));
            let what = fields.collect::<Vec<_>>().join(" ");
            Target { name, max_len, timeout_secs: timeout as u32, rss_mb: rss as u32, what }
        })
        .collect()
}

/// The body of target `name`.
pub fn body(name: &str) -> Option<fn(&[u8])> {
    let f: fn(&[u8]) = match name {
        "telegram_update" => chat::telegram_update,
        "slack_event" => slack::slack_event,
        "slack_interaction" => slack::slack_interaction,
        "discord_interaction" => discord::discord_interaction,
        "discord_gateway" => discord::discord_gateway,
        "whatsapp_notification" => chat::whatsapp_notification,
        "signal_envelope" => chat::signal_envelope,
        "email_mime" => chat::email_mime,
        "webhook" => web::webhook,
        "openai_request" => web::openai_request,
        "web_api" => web::web_api,
        "upload" => web::upload,
        "config_toml" => settings::config_toml,
        "skill_md" => settings::skill_md,
        "sse_openai" => llm::sse_openai,
        "sse_anthropic" => llm::sse_anthropic,
        "mcp_jsonrpc" => mcp::mcp_jsonrpc,
        "media_image" => media::media_image,
        "media_pdf" => media::media_pdf,
        "media_ogg" => media::media_ogg,
        _ => return None,
    };
    Some(f)
}

/// Runs target `name`'s body on `data` (what each `fuzz_targets/<name>.rs` calls).
pub fn run(name: &str, data: &[u8]) {
    let f = body(name).unwrap_or_else(|| panic!("no fuzz target `{name}`"));
    f(data);
}

pub use alloc::CappedAlloc;

/// What each fuzz binary does once before its first input: caps one allocation at the target's
/// `rss_mb` (see [`CappedAlloc`]) and hands panics on the media decoders' pool to `report`
/// instead of aborting (see [`harness::contain_pool_panics`]).
pub fn init(name: &str, report: fn(&std::panic::PanicHookInfo<'_>)) {
    let target = targets().into_iter().find(|t| t.name == name).unwrap_or_else(|| panic!("no fuzz target `{name}`"));
    alloc::set_limit_mb(target.rss_mb as usize);
    harness::contain_pool_panics(report);
}
