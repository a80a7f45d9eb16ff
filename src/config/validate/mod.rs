//! Checks on values that parse but make no sense: addresses, URL schemes, time zones, limits
//! that cannot be zero, a web chat that would be open to the network without a token,
//! `[[triggers]]` sources whose names, secrets, rules or targets cannot work, and `[[hooks]]`,
//! each check given only its section (a platform channel's section is checked by its channel).
//! The sections whose rules belong to a component (`[permissions]`, `[tools]`, `[[schedules]]`)
//! are checked by that component; the order of all checks is [`Config::validate_with`](super::Config::validate_with).
//!
//! Every problem names its key and says what to do. A message here must never contain a secret
//! (tokens, keys, database and Redis URLs): it may name the scheme of a URL, never the rest.
//! This module must never import a component of Butler.

use super::error::{ConfigError, Problem};
use super::{
    AgentConfig, DatabaseConfig, HookConfig, LimitsConfig, LlmConfig, LlmFallback, MemoryConfig, RedisConfig,
    ServerConfig, TriggerConfig, WebConfig,
};
use std::collections::BTreeMap;
use std::net::SocketAddr;

pub(super) fn check_server(server: &ServerConfig, p: &mut Problems) {
    if server.listen.parse::<SocketAddr>().is_err() {
        p.add(
            "server.listen",
            "must be an IP address and port such as 127.0.0.1:8080 (this machine only) or \
             0.0.0.0:8080 (all interfaces); host names are not accepted",
        );
    }
    if server.max_body_bytes < 1024 {
        p.add("server.max_body_bytes", "must be at least 1024 (bytes); the default is 1048576");
    }
    p.positive("server.header_timeout_secs", server.header_timeout_secs);
    p.positive("server.body_timeout_secs", server.body_timeout_secs);
    p.positive("server.max_connections", server.max_connections);
    p.positive("server.max_connections_per_client", server.max_connections_per_client);
    for (i, host) in server.allowed_hosts.iter().enumerate() {
        if super::HostName::parse(host).is_none() {
            p.add(
                format!("server.allowed_hosts[{i}]"),
                format!(
                    "{host:?} is not a host name; write the name a browser or proxy sends in Host, \
                     such as \"butler.example.com\" or \"chat.local:8443\" (no scheme, no path)"
                ),
            );
        }
    }
    if !server.public_url.trim().is_empty() && super::public_host(&server.public_url).is_none() {
        p.add(
            "server.public_url",
            format!(
                "{:?} is not an address people can open; write where Butler is reached from outside, \
                 such as \"https://butler.example.com\" (scheme and host, optionally a port and a path)",
                server.public_url
            ),
        );
    }
    for (i, range) in server.trusted_proxies.iter().enumerate() {
        if super::IpRange::parse(range).is_none() {
            p.add(
                format!("server.trusted_proxies[{i}]"),
                format!("{range:?} is not an IP address or range; write one such as \"10.0.0.5\" or \"10.0.0.0/8\""),
            );
        }
    }
}

pub(super) fn check_stores(database: &DatabaseConfig, redis: Option<&RedisConfig>, p: &mut Problems) {
    let db = database.url.expose();
    if !["sqlite://", "postgres://", "postgresql://"].iter().any(|s| db.starts_with(s)) {
        p.add(
            "database.url",
            format!("{}; use sqlite://data/butler.db or postgres://user:password@host/db", scheme_note(db)),
        );
    }
    p.positive("database.max_connections", database.max_connections);
    if let Some(redis) = redis {
        let url = redis.url.expose();
        if !url.starts_with("redis://") && !url.starts_with("rediss://") {
            p.add(
                "redis.url",
                format!(
                    "{}; use redis://host:6379 or rediss:// for TLS, or remove [redis] to run one process",
                    scheme_note(url)
                ),
            );
        }
        if !(500..=600_000).contains(&redis.lease_ms) {
            p.add("redis.lease_ms", format!("{} is out of range; use 500..600000 (default 3000)", redis.lease_ms));
        }
        if redis.prefix.is_empty() || redis.prefix.contains(char::is_whitespace) {
            p.add("redis.prefix", "must be a non-empty word without spaces (default \"butler\")");
        }
    }
}

pub(super) fn check_llm(llm: &LlmConfig, p: &mut Problems) {
    if let Some(url) = &llm.base_url {
        http_url(p, "llm.base_url", url);
    }
    p.positive("llm.connect_timeout_secs", llm.connect_timeout_secs);
    p.positive("llm.first_byte_timeout_secs", llm.first_byte_timeout_secs);
    p.positive("llm.idle_timeout_secs", llm.idle_timeout_secs);
    p.positive("llm.max_tokens", llm.max_tokens);
    p.positive("llm.context_window", llm.context_window);
    if llm.max_tokens >= llm.context_window && llm.context_window > 0 {
        p.add("llm.max_tokens", "must be smaller than llm.context_window, or no room is left for the prompt");
    }
    for (key, price) in [
        ("llm.input_price_per_mtok", llm.input_price_per_mtok),
        ("llm.output_price_per_mtok", llm.output_price_per_mtok),
        ("llm.cache_read_price_per_mtok", llm.cache_read_price_per_mtok),
        ("llm.cache_write_price_per_mtok", llm.cache_write_price_per_mtok),
    ] {
        check_price(p, key, price);
    }
    check_fallbacks(p, "llm.fallback", &llm.fallback);
    for (name, tier) in &llm.tiers {
        let key = |k: &str| format!("llm.tiers.{name}.{k}");
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            p.add(format!("llm.tiers.{name}"), "a tier name takes letters, digits, `_` and `-` (e.g. worker)");
        }
        if let Some(url) = &tier.base_url {
            http_url(p, &key("base_url"), url);
        }
        if tier.model.as_ref().is_some_and(|m| m.trim().is_empty()) {
            p.add(key("model"), "must name a model, or leave the key out to use llm.model");
        }
        for (k, price) in [
            ("input_price_per_mtok", tier.input_price_per_mtok),
            ("output_price_per_mtok", tier.output_price_per_mtok),
            ("cache_read_price_per_mtok", tier.cache_read_price_per_mtok),
            ("cache_write_price_per_mtok", tier.cache_write_price_per_mtok),
        ] {
            check_price(p, &key(k), price);
        }
        for (k, v) in [
            ("max_tokens", tier.max_tokens.map(u64::from)),
            ("context_window", tier.context_window.map(u64::from)),
            ("connect_timeout_secs", tier.connect_timeout_secs),
            ("first_byte_timeout_secs", tier.first_byte_timeout_secs),
            ("idle_timeout_secs", tier.idle_timeout_secs),
        ] {
            if v == Some(0) {
                p.add(key(k), "must be greater than 0");
            }
        }
        if let Some(merged) = llm.tier(name) {
            if merged.max_tokens >= merged.context_window && merged.context_window > 0 {
                p.add(key("max_tokens"), "must be smaller than the tier's context_window (its own, else llm's)");
            }
        }
        if let Some(fallback) = &tier.fallback {
            check_fallbacks(p, &key("fallback"), fallback);
        }
    }
}

/// A price: a finite number of US dollars per million tokens, 0 or more.
fn check_price(p: &mut Problems, key: &str, price: Option<f64>) {
    if price.is_some_and(|v| !v.is_finite() || v < 0.0) {
        p.add(key, "must be a number of US dollars, 0 or more");
    }
}

/// The entries of a fallback list at `prefix` (`llm.fallback`, `llm.tiers.NAME.fallback`).
fn check_fallbacks(p: &mut Problems, prefix: &str, fallback: &[LlmFallback]) {
    for (i, fb) in fallback.iter().enumerate() {
        let key = |k: &str| format!("{prefix}[{i}].{k}");
        if fb.model.trim().is_empty() {
            p.add(key("model"), "must name a model");
        }
        if let Some(url) = &fb.base_url {
            http_url(p, &key("base_url"), url);
        }
        for (k, price) in [
            ("input_price_per_mtok", fb.input_price_per_mtok),
            ("output_price_per_mtok", fb.output_price_per_mtok),
            ("cache_read_price_per_mtok", fb.cache_read_price_per_mtok),
            ("cache_write_price_per_mtok", fb.cache_write_price_per_mtok),
        ] {
            check_price(p, &key(k), price);
        }
    }
}

/// `listen` is `server.listen`: without a token, the web chat must not be reachable from the network.
pub(super) fn check_web(web: &WebConfig, listen: &str, p: &mut Problems) {
    if web.token.as_ref().is_some_and(|t| t.expose().trim().is_empty()) {
        p.add(
            "channels.web.token",
            "is empty; set a long random value (e.g. from `openssl rand -hex 32`), or remove the key",
        );
    }
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    if let Some(t) = web.token.as_ref().filter(|t| !t.is_empty()) {
        seen.insert(t.expose(), "owner");
    }
    for (name, token) in &web.tokens {
        let key = format!("channels.web.tokens.{name}");
        if !is_simple_name(name) {
            p.add(
                format!("channels.web.tokens.{name:?}"),
                "a web user name must be 1-64 letters, digits, `_`, `-` or `.` (it becomes the identity web:NAME)",
            );
        }
        if name == "owner" && web.token.is_some() {
            p.add(key.clone(), "`owner` is the identity of channels.web.token; use another name or drop one of them");
        }
        if token.expose().trim().is_empty() {
            p.add(key, "is empty; set a long random value (e.g. from `openssl rand -hex 32`)");
        } else if let Some(other) = seen.insert(token.expose(), name) {
            p.add(key, format!("has the same token as `{other}`; each web user needs their own token"));
        }
    }
    let has_token = web.token.is_some() || !web.tokens.is_empty();
    let listen_addr = listen.parse::<SocketAddr>();
    if web.enabled && !has_token && listen_addr.is_ok_and(|a| !a.ip().is_loopback()) {
        p.add(
            "channels.web.token",
            format!(
                "is not set while server.listen ({}) is not a loopback address: without a token the \
                 web chat would be open to the network, and anyone could talk as any user; set \
                 [channels.web] token (or tokens), listen on 127.0.0.1, or set [channels.web] \
                 enabled = false",
                listen
            ),
        );
    }
}

pub(super) fn check_rest(agent: &AgentConfig, memory: &MemoryConfig, l: &LimitsConfig, p: &mut Problems) {
    if agent.name.trim().is_empty() {
        p.add("agent.name", "must not be empty; it is the assistant's name in its prompt");
    }
    if agent.timezone.parse::<chrono_tz::Tz>().is_err() {
        p.add(
            "agent.timezone",
            format!(
                "`{}` is not an IANA time zone; use a name such as UTC, Europe/Berlin or America/New_York",
                agent.timezone
            ),
        );
    }
    p.positive("memory.recall_limit", memory.recall_limit);
    p.positive("memory.recall_budget_tokens", memory.recall_budget_tokens);
    p.positive("limits.max_iterations", l.max_iterations);
    p.positive("limits.tool_timeout_secs", l.tool_timeout_secs);
    p.positive("limits.max_tool_result_chars", l.max_tool_result_chars);
    p.positive("limits.session_mailbox", l.session_mailbox);
    p.positive("limits.session_idle_secs", l.session_idle_secs);
    p.positive("limits.history_messages", l.history_messages);
    p.positive("limits.max_event_attempts", l.max_event_attempts);
    for (key, usd) in [("limits.max_usd_per_turn", l.max_usd_per_turn), ("limits.max_usd_per_day", l.max_usd_per_day)] {
        if usd.is_some_and(|v| !v.is_finite() || v <= 0.0) {
            p.add(key, "must be a number of US dollars above 0, or leave the key out for no limit");
        }
    }
}

/// `[[triggers]]`: unique path-safe names, a secret, sane limits, and for every way a source
/// can notify or start an agent turn, a target that parses.
pub(super) fn check_triggers(triggers: &[TriggerConfig], p: &mut Problems) {
    let mut seen = std::collections::BTreeSet::new();
    for (i, t) in triggers.iter().enumerate() {
        let key = |k: &str| format!("triggers[{i}].{k}");
        let name_ok = (1..=64).contains(&t.name.len())
            && t.name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
        if !name_ok {
            p.add(key("name"), "must be 1-64 of a-z, 0-9, `_` and `-` (it is the path segment of POST /hooks/NAME)");
        } else if !seen.insert(t.name.as_str()) {
            p.add(key("name"), format!("`{}` is used by an earlier [[triggers]] entry; names must be unique", t.name));
        }
        if t.secret.expose().trim().is_empty() {
            p.add(
                key("secret"),
                "is empty; set the webhook secret shared with the sender (e.g. from `openssl rand -hex 32`)",
            );
        }
        p.positive(&key("rate_limit_per_minute"), t.rate_limit_per_minute);
        p.positive(&key("max_payload_chars"), t.max_payload_chars);
        let source_target = t.target.as_deref();
        let mut uses = vec![(key("target"), key("conversation"), t.default, source_target, t.conversation.is_some())];
        for (j, r) in t.rules.iter().enumerate() {
            let rk = |k: &str| format!("triggers[{i}].rules[{j}].{k}");
            for (path, want) in &r.when {
                check_when(p, &rk("when"), path, want);
            }
            let target = r.target.as_deref().or(source_target);
            let has_conv = r.conversation.is_some() || t.conversation.is_some();
            uses.push((rk("target"), rk("conversation"), r.action, target, has_conv));
        }
        for (target_key, conv_key, action, target, has_conv) in uses {
            check_trigger_target(p, &target_key, &conv_key, action, target, has_conv);
        }
    }
}

/// `[[hooks]]`: a command for command hooks, an http(s) URL for HTTP hooks (and not the key
/// of the other type), a timeout in 1..=3600 seconds, a non-empty matcher, `sandbox` only
/// on command hooks and `network` only with `sandbox`. (Whether `bwrap` is there is checked
/// when Butler starts, by `crate::hooks`.)
pub(super) fn check_hooks(hooks: &[HookConfig], p: &mut Problems) {
    use super::HookKind;
    for (i, h) in hooks.iter().enumerate() {
        let key = |k: &str| format!("hooks[{i}].{k}");
        match h.kind {
            HookKind::Command => {
                if h.command.as_deref().is_none_or(|c| c.trim().is_empty()) {
                    p.add(key("command"), "a hook of type \"command\" needs the command to run (with sh -c)");
                }
                if h.url.is_some() {
                    p.add(key("url"), "is only for type = \"http\"; remove it or change the type");
                }
            }
            HookKind::Http => {
                match h.url.as_deref() {
                    Some(url) => http_url(p, &key("url"), url),
                    None => p.add(key("url"), "a hook of type \"http\" needs the http:// or https:// URL to POST to"),
                }
                if h.command.is_some() {
                    p.add(key("command"), "is only for type = \"command\"; remove it or change the type");
                }
            }
        }
        if !(1..=HookConfig::MAX_TIMEOUT_SECS).contains(&h.timeout_secs) {
            p.add(key("timeout_secs"), "must be 1 to 3600 (seconds); the default is 5");
        }
        if h.matcher.trim().is_empty() {
            p.add(key("matcher"), "must not be empty; use a tool name, a glob such as file_*, or * for every tool");
        }
        if h.sandbox && h.kind != HookKind::Command {
            p.add(key("sandbox"), "is only for type = \"command\" (an HTTP hook starts no process); remove it");
        }
        if h.network && !h.sandbox {
            p.add(
                key("network"),
                "only applies with sandbox = true (an unsandboxed command always has the network); \
                 set sandbox = true or remove it",
            );
        }
    }
}

/// A `when` entry: a `headers.` or `body.` path, and a string, number, boolean or list of those.
fn check_when(p: &mut Problems, key: &str, path: &str, want: &serde_json::Value) {
    use serde_json::Value;
    let rooted = ["headers.", "body."].iter().any(|r| path.strip_prefix(r).is_some_and(|rest| !rest.is_empty()));
    if !rooted {
        p.add(
            format!("{key}.{path:?}"),
            "a field path must start with `headers.` or `body.` (e.g. headers.x-github-event, body.repository.full_name)",
        );
    }
    let scalar = |v: &Value| matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_));
    let ok = match want {
        Value::Array(items) => !items.is_empty() && items.iter().all(scalar),
        other => scalar(other),
    };
    if !ok {
        p.add(
            format!("{key}.{path:?}"),
            "must be a string (`*` matches anything), a number, a boolean, or a non-empty list of those",
        );
    }
}

/// Notify needs a conversation `channel:id` as target; agent needs an identity and a conversation.
fn check_trigger_target(
    p: &mut Problems,
    target_key: &str,
    conv_key: &str,
    action: super::TriggerAction,
    target: Option<&str>,
    has_conversation: bool,
) {
    use super::TriggerAction;
    match action {
        TriggerAction::Drop => {}
        TriggerAction::Notify => match target.map(str::parse::<butler_channel::ConversationRef>) {
            Some(Ok(_)) => {}
            Some(Err(e)) => p.add(target_key, format!("must be a conversation channel:id such as web:alerts: {e}")),
            None => p.add(
                target_key,
                "notify needs a target conversation (channel:id, e.g. web:alerts or telegram:-1001234567890) on                  the rule or its [[triggers]] source",
            ),
        },
        TriggerAction::Agent => {
            match target.map(str::parse::<butler_channel::Identity>) {
                Some(Ok(_)) => {}
                Some(Err(e)) => p.add(target_key, format!("must be an identity channel:user such as web:alice: {e}")),
                None => p.add(
                    target_key,
                    "agent needs a target identity (whose turn it is, e.g. web:alice) on the rule or its source",
                ),
            }
            if !has_conversation {
                p.add(
                    conv_key,
                    "agent needs a conversation for the reply (e.g. web:alice-github) on the rule or its source",
                );
            }
        }
    }
}

/// The problems found so far, in the order of the checks.
#[derive(Default)]
pub struct Problems(Vec<Problem>);

impl Problems {
    /// One problem: the key (`section.key`, `list[i].key`) and what to do about it.
    pub fn add(&mut self, key: impl Into<String>, message: impl Into<String>) {
        self.0.push(Problem { key: key.into(), message: message.into() });
    }

    /// `Ok` when no problem was found, else all of them as [`ConfigError::Invalid`] (origin
    /// `config`; `load` puts the file name in).
    pub(super) fn into_result(self) -> Result<(), ConfigError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(ConfigError::Invalid { origin: "config".into(), problems: self.0 })
        }
    }

    /// Each problem as one line, `key: message` (for errors that are not a config check's).
    pub fn into_lines(self) -> Vec<String> {
        self.0.into_iter().map(|p| format!("{}: {}", p.key, p.message)).collect()
    }

    /// A problem at `key` when `n` is 0.
    pub fn positive<N: PartialEq + Default>(&mut self, key: &str, n: N) {
        if n == N::default() {
            self.add(key, "must be greater than 0");
        }
    }
}

/// A problem at `key` unless `url` is http(s); the message names the scheme only.
pub fn http_url(p: &mut Problems, key: &str, url: &str) {
    if !url.starts_with("http://") && !url.starts_with("https://") {
        p.add(key, format!("{}; use an http:// or https:// URL", scheme_note(url)));
    }
}

/// "has scheme `mysql://`" or "has no scheme": says what is wrong without showing the URL.
fn scheme_note(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, _)) if scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) => {
            format!("has the unsupported scheme `{scheme}://`")
        }
        _ => "does not start with a scheme such as `name://`".into(),
    }
}

fn is_simple_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
}
