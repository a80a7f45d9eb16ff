//! The checks of the `[permissions]` section: a timeout, usable globs, approvers that name
//! someone, and contexts with a known channel name and role that change something. The
//! permission engine owns these rules (the globs are its globs); config only holds the data and
//! calls this through `app::CONFIG_CHECKS`.
//!
//! Every problem names its key and says what to do. This must never change the config, and a
//! message must never contain a secret.

use super::glob;
use crate::config::{Config, Problems, UserRole};

/// `[permissions]`: a timeout, usable globs, approvers that name someone, and contexts with
/// a known channel name and role that change something.
pub fn check_config(cfg: &Config, p: &mut Problems) {
    let perm = &cfg.permissions;
    p.positive("permissions.approval_timeout_secs", perm.approval_timeout_secs);
    for (key, globs) in [
        ("denied_tools", &perm.denied_tools),
        ("allowed_tools", &perm.allowed_tools),
        ("allow_paths", &perm.allow_paths),
        ("deny_paths", &perm.deny_paths),
        ("denied_commands", &perm.denied_commands),
    ] {
        for (i, pattern) in globs.iter().enumerate() {
            if let Some(why) = glob::problem(pattern) {
                p.add(
                    format!("permissions.{key}[{i}]"),
                    format!("{why}; a glob uses `*` (any run of characters), `?` and `[abc]`"),
                );
            }
        }
    }
    for (i, host) in perm.trusted_hosts.iter().enumerate() {
        if let Err(why) = crate::tools::builtin::net::check_host_pattern(host) {
            p.add(format!("permissions.trusted_hosts[{i}]"), why);
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
        if let Some(role) = c.role.as_deref().filter(|r| UserRole::parse(r).is_none()) {
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

/// Approvers: `requester`, `role:owner|member|guest`, `user:<id>` or an identity `channel:id`.
fn check_approvers(p: &mut Problems, key: &str, approvers: &[String]) {
    if approvers.is_empty() {
        p.add(key, "must name at least one approver, e.g. [\"requester\"] or [\"role:owner\"]");
    }
    for (i, a) in approvers.iter().enumerate() {
        let ok = match (a.strip_prefix("role:"), a.strip_prefix("user:")) {
            _ if a == "requester" => true,
            (Some(role), _) => UserRole::parse(role).is_some(),
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
