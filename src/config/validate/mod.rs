//! Checks on values that parse but make no sense: addresses, URL schemes, time zones, limits
//! that cannot be zero, a web chat that would be open to the network without a token, and
//! `[[triggers]]` sources whose names, secrets, rules or targets cannot work, and `[permissions]`
//! globs, approvers and contexts that could not match or name anyone, and `[[schedules]]` jobs
//! whose cron, zone, prompt, name or target could never run.
//!
//! Every problem names its key and says what to do. A message here must never contain a secret
//! (tokens, keys, database and Redis URLs): it may name the scheme of a URL, never the rest.

use super::error::{ConfigError, Problem};
use super::Config;
use std::collections::BTreeMap;
use std::net::SocketAddr;

mod channels;

impl Config {
    /// All problems at once, as [`ConfigError::Invalid`] (origin `config`; `load` puts the file
    /// name in).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut p = Problems::default();
        self.check_server(&mut p);
        self.check_stores(&mut p);
        self.check_llm(&mut p);
        self.check_web(&mut p);
        self.check_rest(&mut p);
        self.check_triggers(&mut p);
        self.check_permissions(&mut p);
        self.check_hooks(&mut p);
        self.check_tools(&mut p);
        self.check_telegram(&mut p);
        self.check_slack(&mut p);
        self.check_discord(&mut p);
        self.check_schedules(&mut p);
        if p.0.is_empty() {
            Ok(())
        } else {
            Err(ConfigError::Invalid { origin: "config".into(), problems: p.0 })
        }
    }

    fn check_server(&self, p: &mut Problems) {
        if self.server.listen.parse::<SocketAddr>().is_err() {
            p.add(
                "server.listen",
                "must be an IP address and port such as 127.0.0.1:8080 (this machine only) or \
                 0.0.0.0:8080 (all interfaces); host names are not accepted",
            );
        }
        if self.server.max_body_bytes < 1024 {
            p.add("server.max_body_bytes", "must be at least 1024 (bytes); the default is 1048576");
        }
        positive(p, "server.header_timeout_secs", self.server.header_timeout_secs);
        positive(p, "server.body_timeout_secs", self.server.body_timeout_secs);
        positive(p, "server.max_connections", self.server.max_connections);
    }

    fn check_stores(&self, p: &mut Problems) {
        let db = self.database.url.expose();
        if !["sqlite://", "postgres://", "postgresql://"].iter().any(|s| db.starts_with(s)) {
            p.add(
                "database.url",
                format!("{}; use sqlite://data/butler.db or postgres://user:password@host/db", scheme_note(db)),
            );
        }
        positive(p, "database.max_connections", self.database.max_connections);
        if let Some(redis) = &self.redis {
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
        }
    }

    fn check_llm(&self, p: &mut Problems) {
        let llm = &self.llm;
        if let Some(url) = &llm.base_url {
            http_url(p, "llm.base_url", url);
        }
        positive(p, "llm.connect_timeout_secs", llm.connect_timeout_secs);
        positive(p, "llm.first_byte_timeout_secs", llm.first_byte_timeout_secs);
        positive(p, "llm.idle_timeout_secs", llm.idle_timeout_secs);
        positive(p, "llm.max_tokens", llm.max_tokens);
        positive(p, "llm.context_window", llm.context_window);
        if llm.max_tokens >= llm.context_window && llm.context_window > 0 {
            p.add("llm.max_tokens", "must be smaller than llm.context_window, or no room is left for the prompt");
        }
        for (key, price) in [
            ("llm.input_price_per_mtok", llm.input_price_per_mtok),
            ("llm.output_price_per_mtok", llm.output_price_per_mtok),
        ] {
            if !price.is_finite() || price < 0.0 {
                p.add(key, "must be a number of US dollars, 0 or more");
            }
        }
        for (i, fb) in llm.fallback.iter().enumerate() {
            if fb.model.trim().is_empty() {
                p.add(format!("llm.fallback[{i}].model"), "must name a model");
            }
            if let Some(url) = &fb.base_url {
                http_url(p, &format!("llm.fallback[{i}].base_url"), url);
            }
        }
    }

    fn check_web(&self, p: &mut Problems) {
        let web = &self.channels.web;
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
                p.add(
                    key.clone(),
                    "`owner` is the identity of channels.web.token; use another name or drop one of them",
                );
            }
            if token.expose().trim().is_empty() {
                p.add(key, "is empty; set a long random value (e.g. from `openssl rand -hex 32`)");
            } else if let Some(other) = seen.insert(token.expose(), name) {
                p.add(key, format!("has the same token as `{other}`; each web user needs their own token"));
            }
        }
        let has_token = web.token.is_some() || !web.tokens.is_empty();
        let listen = self.server.listen.parse::<SocketAddr>();
        if web.enabled && !has_token && listen.is_ok_and(|a| !a.ip().is_loopback()) {
            p.add(
                "channels.web.token",
                format!(
                    "is not set while server.listen ({}) is not a loopback address: without a token the \
                     web chat would be open to the network, and anyone could talk as any user; set \
                     [channels.web] token (or tokens), listen on 127.0.0.1, or set [channels.web] \
                     enabled = false",
                    self.server.listen
                ),
            );
        }
    }

    fn check_rest(&self, p: &mut Problems) {
        if self.agent.name.trim().is_empty() {
            p.add("agent.name", "must not be empty; it is the assistant's name in its prompt");
        }
        if self.agent.timezone.parse::<chrono_tz::Tz>().is_err() {
            p.add(
                "agent.timezone",
                format!(
                    "`{}` is not an IANA time zone; use a name such as UTC, Europe/Berlin or America/New_York",
                    self.agent.timezone
                ),
            );
        }
        positive(p, "memory.recall_limit", self.memory.recall_limit);
        positive(p, "memory.recall_budget_tokens", self.memory.recall_budget_tokens);
        let l = &self.limits;
        positive(p, "limits.max_iterations", l.max_iterations);
        positive(p, "limits.tool_timeout_secs", l.tool_timeout_secs);
        positive(p, "limits.max_tool_result_chars", l.max_tool_result_chars);
        positive(p, "limits.session_mailbox", l.session_mailbox);
        positive(p, "limits.session_idle_secs", l.session_idle_secs);
        positive(p, "limits.history_messages", l.history_messages);
        positive(p, "limits.max_event_attempts", l.max_event_attempts);
    }
}

impl Config {
    /// `[[triggers]]`: unique path-safe names, a secret, sane limits, and for every way a source
    /// can notify or start an agent turn, a target that parses.
    fn check_triggers(&self, p: &mut Problems) {
        let mut seen = std::collections::BTreeSet::new();
        for (i, t) in self.triggers.iter().enumerate() {
            let key = |k: &str| format!("triggers[{i}].{k}");
            let name_ok = (1..=64).contains(&t.name.len())
                && t.name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
            if !name_ok {
                p.add(
                    key("name"),
                    "must be 1-64 of a-z, 0-9, `_` and `-` (it is the path segment of POST /hooks/NAME)",
                );
            } else if !seen.insert(t.name.as_str()) {
                p.add(
                    key("name"),
                    format!("`{}` is used by an earlier [[triggers]] entry; names must be unique", t.name),
                );
            }
            if t.secret.expose().trim().is_empty() {
                p.add(
                    key("secret"),
                    "is empty; set the webhook secret shared with the sender (e.g. from `openssl rand -hex 32`)",
                );
            }
            positive(p, &key("rate_limit_per_minute"), t.rate_limit_per_minute);
            positive(p, &key("max_payload_chars"), t.max_payload_chars);
            let source_target = t.target.as_deref();
            let mut uses =
                vec![(key("target"), key("conversation"), t.default, source_target, t.conversation.is_some())];
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
}

impl Config {
    /// `[[hooks]]`: a command for command hooks, an http(s) URL for HTTP hooks (and not the key
    /// of the other type), a timeout in 1..=3600 seconds, a non-empty matcher, `sandbox` only
    /// on command hooks and `network` only with `sandbox`. (Whether `bwrap` is there is checked
    /// when Butler starts, by `crate::hooks`.)
    fn check_hooks(&self, p: &mut Problems) {
        use super::HookKind;
        for (i, h) in self.hooks.iter().enumerate() {
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
                        None => {
                            p.add(key("url"), "a hook of type \"http\" needs the http:// or https:// URL to POST to")
                        }
                    }
                    if h.command.is_some() {
                        p.add(key("command"), "is only for type = \"command\"; remove it or change the type");
                    }
                }
            }
            if !(1..=super::HookConfig::MAX_TIMEOUT_SECS).contains(&h.timeout_secs) {
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

impl Config {
    /// `[permissions]`: a timeout, usable globs, approvers that name someone, and contexts with
    /// a known channel name and role that change something.
    fn check_permissions(&self, p: &mut Problems) {
        let perm = &self.permissions;
        positive(p, "permissions.approval_timeout_secs", perm.approval_timeout_secs);
        for (key, globs) in [
            ("denied_tools", &perm.denied_tools),
            ("allowed_tools", &perm.allowed_tools),
            ("allow_paths", &perm.allow_paths),
            ("deny_paths", &perm.deny_paths),
            ("denied_commands", &perm.denied_commands),
        ] {
            for (i, glob) in globs.iter().enumerate() {
                if let Some(why) = crate::permissions::pattern_problem(glob) {
                    p.add(
                        format!("permissions.{key}[{i}]"),
                        format!("{why}; a glob uses `*` (any run of characters), `?` and `[abc]`"),
                    );
                }
            }
        }
        check_approvers(p, "permissions.approvers", &perm.approvers);
        for (i, c) in perm.contexts.iter().enumerate() {
            let key = |k: &str| format!("permissions.contexts[{i}].{k}");
            let plain = |s: &str| {
                !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
            };
            if c.channel.as_deref().is_some_and(|ch| !plain(ch)) {
                p.add(
                    key("channel"),
                    "must be a channel name such as web, telegram or slack (lowercase), or be left out to match any",
                );
            }
            if let Some(role) = c.role.as_deref().filter(|r| crate::store::UserRole::parse(r).is_none()) {
                p.add(key("role"), format!("`{role}` is not a role; use owner, member or guest, or leave it out"));
            }
            if let Some(approvers) = &c.approvers {
                check_approvers(p, &key("approvers"), approvers);
            }
            if c.mode.is_none() && c.approvers.is_none() {
                p.add(
                    format!("permissions.contexts[{i}]"),
                    "sets neither mode nor approvers, so it changes nothing; add one or remove the entry",
                );
            }
            if let Some(conv) = &c.conversation {
                if c.mode.is_some() {
                    p.add(
                        key("mode"),
                        "an entry with `conversation` only chooses approvers; set the mode in an entry matched by \
                         channel, kind or role",
                    );
                }
                if c.channel.as_deref().is_some_and(|ch| ch != conv.channel) {
                    p.add(
                        key("conversation"),
                        format!("`{conv}` is not on channel `{}`", c.channel.as_deref().unwrap_or("")),
                    );
                }
            }
        }
    }
}

/// Approvers: `requester`, `role:owner|member|guest`, `user:<id>` or an identity `channel:id`.
fn check_approvers(p: &mut Problems, key: &str, approvers: &[String]) {
    if approvers.is_empty() {
        p.add(key, "must name at least one approver, e.g. [\"requester\"] or [\"role:owner\"]");
    }
    for (i, a) in approvers.iter().enumerate() {
        let ok = match (a.strip_prefix("role:"), a.strip_prefix("user:")) {
            _ if a == "requester" => true,
            (Some(role), _) => crate::store::UserRole::parse(role).is_some(),
            (_, Some(id)) => !id.is_empty() && !id.chars().any(char::is_whitespace),
            _ => a.parse::<butler_channel::Identity>().is_ok() && !a.chars().any(char::is_whitespace),
        };
        if !ok {
            p.add(
                format!("{key}[{i}]"),
                format!(
                    "`{a}` is not an approver; use requester, role:owner, role:member, role:guest, user:USER_ID \
                     or an identity such as slack:U2CERLKJA"
                ),
            );
        }
    }
}

#[derive(Default)]
pub(super) struct Problems(Vec<Problem>);

impl Problems {
    pub(super) fn add(&mut self, key: impl Into<String>, message: impl Into<String>) {
        self.0.push(Problem { key: key.into(), message: message.into() });
    }
}

pub(super) fn positive<N: PartialEq + Default>(p: &mut Problems, key: &str, n: N) {
    if n == N::default() {
        p.add(key, "must be greater than 0");
    }
}

pub(super) fn http_url(p: &mut Problems, key: &str, url: &str) {
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

impl Config {
    /// `[tools]`: a workspace directory, limits above 0, well-formed `allowed_hosts` (and no
    /// address or host name the guard would always refuse, such as `metadata.google.internal`),
    /// no duplicate send_message targets.
    fn check_tools(&self, p: &mut Problems) {
        let t = &self.tools;
        if t.workspace_dir.trim().is_empty() {
            p.add("tools.workspace_dir", "must not be empty; each user's workspace is a directory below it");
        }
        positive(p, "tools.web_fetch.max_bytes", t.web_fetch.max_bytes);
        positive(p, "tools.web_fetch.timeout_secs", t.web_fetch.timeout_secs);
        positive(p, "tools.http_request.max_bytes", t.http_request.max_bytes);
        positive(p, "tools.http_request.timeout_secs", t.http_request.timeout_secs);
        positive(p, "tools.shell.timeout_secs", t.shell.timeout_secs);
        positive(p, "tools.shell.max_output_bytes", t.shell.max_output_bytes);
        positive(p, "tools.files.max_read_bytes", t.files.max_read_bytes);
        positive(p, "tools.files.max_write_bytes", t.files.max_write_bytes);
        use crate::tools::builtin::net::{check_host_pattern, classify, refused_host_pattern, AddrClass};
        for (i, host) in t.http_request.allowed_hosts.iter().enumerate() {
            let key = format!("tools.http_request.allowed_hosts[{i}]");
            if let Err(why) = check_host_pattern(host) {
                p.add(key, why);
                continue;
            }
            if let Some(what) = refused_host_pattern(host) {
                p.add(key, format!("`{host}` is {what}; tools never reach it, so it cannot be allowed"));
                continue;
            }
            let ip = host.trim_start_matches('[').trim_end_matches(']').parse::<std::net::IpAddr>();
            match ip.map(classify) {
                Ok(AddrClass::Forbidden(what)) => {
                    p.add(key, format!("`{host}` is {what}; tools never reach it"));
                }
                Ok(AddrClass::Local(what)) if !t.http_request.allow_private_addresses => p.add(
                    key,
                    format!(
                        "`{host}` is {what}, which is refused unless tools.http_request.allow_private_addresses \
                         = true"
                    ),
                ),
                _ => {}
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, target) in t.send_message.targets.iter().enumerate() {
            if !seen.insert(target) {
                p.add(format!("tools.send_message.targets[{i}]"), format!("`{target}` is listed twice"));
            }
        }
    }
}

impl Config {
    /// `[[schedules]]`: unique one-line names, a 5-field cron that fires at all, an IANA zone, a
    /// prompt, and a target conversation on a channel this config runs.
    fn check_schedules(&self, p: &mut Problems) {
        use crate::schedule::{cron, jobs};
        let ch = &self.channels;
        let running = [
            ("web", ch.web.enabled),
            ("telegram", ch.telegram.is_some()),
            ("slack", ch.slack.is_some()),
            ("discord", ch.discord.is_some()),
        ];
        let mut seen = std::collections::BTreeSet::new();
        for (i, s) in self.schedules.iter().enumerate() {
            let key = |k: &str| format!("schedules[{i}].{k}");
            match jobs::check_name(&s.name) {
                Err(e) => p.add(key("name"), e),
                Ok(name) if !seen.insert(name.clone()) => p.add(
                    key("name"),
                    format!("`{name}` is used by an earlier [[schedules]] entry; names must be unique"),
                ),
                Ok(_) => {}
            }
            let tz = cron::parse_tz(&s.tz);
            if let Err(e) = &tz {
                p.add(key("tz"), e.clone());
            }
            match (cron::parse_cron(&s.cron), tz) {
                (Err(e), _) => p.add(key("cron"), e),
                (Ok(c), Ok(tz)) if cron::next_after(&c, tz, crate::store::now_ms()).is_none() => {
                    p.add(key("cron"), format!("`{}` never fires (no such date)", s.cron))
                }
                _ => {}
            }
            if s.prompt.trim().is_empty() {
                p.add(key("prompt"), "must not be empty; it is what the agent is asked at each fire time");
            }
            match jobs::check_target(&s.target.to_string()) {
                Err(e) => p.add(key("target"), e),
                Ok(t) if !running.iter().any(|(name, on)| *on && *name == t.channel) => p.add(
                    key("target"),
                    format!(
                        "is on the channel `{}`, which this config does not run; configure it, or deliver to a \
                         web conversation such as web:briefings",
                        t.channel
                    ),
                ),
                Ok(_) => {}
            }
        }
    }
}
