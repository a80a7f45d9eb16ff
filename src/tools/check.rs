//! The checks of the `[tools]` section: a workspace directory, limits above 0, well-formed
//! `allowed_hosts` (and no address or host name the network guard would always refuse), no
//! duplicate send_message targets, and a `[tools.web_search]` that can search (a provider, its
//! URL, its key). The tools own these rules (the host patterns are their
//! guard's); config only holds the data and calls this through `app::CONFIG_CHECKS`.
//!
//! Every problem names its key and says what to do. This must never change the config, resolve
//! a name or open a connection, and a message must never contain a secret.

use super::builtin::net::{check_host_pattern, classify, refused_host_pattern, AddrClass};
use crate::config::{Config, Problems, SearchProvider, WebSearchConfig};

/// `[tools]`: a workspace directory, limits above 0, well-formed `allowed_hosts` (and no
/// address or host name the guard would always refuse, such as `metadata.google.internal`),
/// no duplicate send_message targets, a usable `[tools.web_search]`.
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
    check_web_search(&t.web_search, p);
    let mut seen = std::collections::BTreeSet::new();
    for (i, target) in t.send_message.targets.iter().enumerate() {
        if !seen.insert(target) {
            p.add(format!("tools.send_message.targets[{i}]"), format!("`{target}` is listed twice"));
        }
    }
}

/// `[tools.web_search]`: limits above 0 (at most 20 results); when the tool is on, a provider,
/// a base URL where the provider has no public one, a key where the provider needs one; a
/// base URL that is http(s) and not an address tools never reach (cloud metadata, link-local).
/// Loopback and private addresses are fine: the base URL is the operator's own choice.
fn check_web_search(w: &WebSearchConfig, p: &mut Problems) {
    p.positive("tools.web_search.max_results", w.max_results);
    p.positive("tools.web_search.timeout_secs", w.timeout_secs);
    p.positive("tools.web_search.per_minute", w.per_minute);
    let most = super::builtin::WEB_SEARCH_MAX_COUNT;
    if w.max_results > most {
        p.add(
            "tools.web_search.max_results",
            format!("must be at most {most} (the most a search API returns at once)"),
        );
    }
    if let Some(url) = w.base_url.as_deref().filter(|u| !u.trim().is_empty()) {
        check_search_url(url, p);
    }
    if !w.is_on() {
        return;
    }
    let Some(provider) = w.provider else {
        p.add(
            "tools.web_search.provider",
            "web_search is enabled but no provider is chosen; set provider = \"searxng\" (your own instance, with \
             base_url), \"brave\" or \"tavily\" (with api_key), or enabled = false",
        );
        return;
    };
    if w.endpoint().is_none() {
        p.add(
            "tools.web_search.base_url",
            "SearXNG has no public default; set base_url to your instance, e.g. \"http://127.0.0.1:8888\" (with \
             `json` in search.formats of its settings.yml)",
        );
    }
    let no_key = w.api_key.as_ref().is_none_or(|k| k.expose().trim().is_empty());
    let signup = match provider {
        SearchProvider::Brave => Some("https://brave.com/search/api/"),
        SearchProvider::Tavily => Some("https://app.tavily.com"),
        SearchProvider::Searxng => None,
    };
    if let (true, Some(signup)) = (no_key, signup) {
        let label = provider.label();
        let var = label.to_ascii_uppercase();
        p.add(
            "tools.web_search.api_key",
            format!(
                "{label} needs an API key; get one at {signup} and set api_key = \"${{{var}_API_KEY}}\" (or \
                 BUTLER_TOOLS__WEB_SEARCH__API_KEY)"
            ),
        );
    }
}

/// The base URL: http(s) with a host, and not an address no tool may reach.
fn check_search_url(url: &str, p: &mut Problems) {
    const KEY: &str = "tools.web_search.base_url";
    let parsed = match reqwest::Url::parse(url.trim()) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => u,
        _ => {
            p.add(KEY, "must be an http:// or https:// URL with a host, e.g. \"http://127.0.0.1:8888\"");
            return;
        }
    };
    let host = parsed.host_str().unwrap_or_default();
    let ip = host.trim_start_matches('[').trim_end_matches(']').parse::<std::net::IpAddr>();
    if let Ok(AddrClass::Forbidden(what)) = ip.map(classify) {
        p.add(KEY, format!("`{host}` is {what}; tools never reach it"));
    } else if let Some(what) = refused_host_pattern(host).filter(|w| w.contains("metadata")) {
        p.add(KEY, format!("`{host}` is {what}; tools never reach it"));
    }
}
