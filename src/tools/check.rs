//! The checks of the `[tools]` section: a workspace directory, limits above 0, well-formed
//! `allowed_hosts` (and no address or host name the network guard would always refuse), no
//! duplicate send_message targets. The tools own these rules (the host patterns are their
//! guard's); config only holds the data and calls this through `app::CONFIG_CHECKS`.
//!
//! Every problem names its key and says what to do. This must never change the config, resolve
//! a name or open a connection, and a message must never contain a secret.

use super::builtin::net::{check_host_pattern, classify, refused_host_pattern, AddrClass};
use crate::config::{Config, Problems};

/// `[tools]`: a workspace directory, limits above 0, well-formed `allowed_hosts` (and no
/// address or host name the guard would always refuse, such as `metadata.google.internal`),
/// no duplicate send_message targets.
pub fn check_config(cfg: &Config, p: &mut Problems) {
    let t = &cfg.tools;
    if t.workspace_dir.trim().is_empty() {
        p.add("tools.workspace_dir", "must not be empty; each user's workspace is a directory below it");
    }
    p.positive("tools.web_fetch.max_bytes", t.web_fetch.max_bytes);
    p.positive("tools.web_fetch.timeout_secs", t.web_fetch.timeout_secs);
    p.positive("tools.http_request.max_bytes", t.http_request.max_bytes);
    p.positive("tools.http_request.timeout_secs", t.http_request.timeout_secs);
    p.positive("tools.shell.timeout_secs", t.shell.timeout_secs);
    p.positive("tools.shell.max_output_bytes", t.shell.max_output_bytes);
    p.positive("tools.files.max_read_bytes", t.files.max_read_bytes);
    p.positive("tools.files.max_write_bytes", t.files.max_write_bytes);
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
