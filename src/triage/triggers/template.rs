//! Notification templates: `{{body.repository.full_name}}` placeholders filled from the event,
//! with a few helpers after a `|`: `first_line`, `short` (the first 7 characters, for commit
//! ids), `upper`, `lower`.
//!
//! A missing field renders as nothing; values render as plain text (strings without quotes,
//! numbers and booleans as written, lists and objects as compact JSON). Templates are data from
//! the config: nothing here may evaluate code, read files or touch the network.

use super::rules::{lookup, plain};
use serde_json::Value;

/// Fills the placeholders of `template` from `event`. A placeholder with an unknown helper, or
/// an unclosed `{{`, is kept literally so the mistake is visible in the message.
pub fn render(template: &str, event: &Value) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &after[..end];
        match placeholder(inner, event) {
            Some(text) => out.push_str(&text),
            None => out.push_str(&rest[start..start + 2 + end + 2]),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

/// The text for one `path | helper | helper`, or `None` when a helper is unknown.
fn placeholder(inner: &str, event: &Value) -> Option<String> {
    let mut parts = inner.split('|').map(str::trim);
    let path = parts.next().unwrap_or_default();
    let mut text = lookup(event, path).map(text_of).unwrap_or_default();
    for helper in parts {
        text = match helper {
            "first_line" => text.lines().next().unwrap_or_default().to_string(),
            "short" => text.chars().take(7).collect(),
            "upper" => text.to_uppercase(),
            "lower" => text.to_lowercase(),
            _ => return None,
        };
    }
    Some(text)
}

fn text_of(v: &Value) -> String {
    match v {
        Value::Array(_) | Value::Object(_) => v.to_string(),
        other => plain(other),
    }
}

/// The first `max` characters of `s`, and whether anything was cut.
pub(crate) fn cut(s: &str, max: usize) -> (&str, bool) {
    match s.char_indices().nth(max) {
        Some((i, _)) => (&s[..i], true),
        None => (s, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn templates_table() {
        let ev = json!({
            "source": "github",
            "text": "github push to octo-org/hello-world (main)",
            "headers": {"x-github-event": "push"},
            "body": {
                "ref": "refs/heads/main",
                "after": "6113728f27ae82c7b1a177c8d03f9e96e0adf246",
                "forced": false,
                "size": 2,
                "nothing": null,
                "pusher": {"name": "octocat"},
                "repository": {"full_name": "octo-org/hello-world"},
                "commits": [{"message": "Fix the build\n\nLong explanation."}],
                "labels": ["bug", "ui"]
            }
        });
        let cases = [
            ("{{body.repository.full_name}}", "octo-org/hello-world"),
            ("{{ body.pusher.name }} pushed to {{body.ref}}", "octocat pushed to refs/heads/main"),
            ("{{headers.X-GitHub-Event}}", "push"),
            ("{{body.commits.0.message | first_line}}", "Fix the build"),
            ("{{body.after|short}}", "6113728"),
            ("{{body.pusher.name | upper}}!", "OCTOCAT!"),
            ("{{ body.after | short | upper }}", "6113728"),
            ("{{body.size}} commits, forced: {{body.forced}}", "2 commits, forced: false"),
            ("[{{body.missing}}] [{{body.nothing}}] [{{}}]", "[] [] []"),
            ("{{body.labels}}", "[\"bug\",\"ui\"]"),
            ("{{body.pusher}}", "{\"name\":\"octocat\"}"),
            ("{{text}} via {{source}}", "github push to octo-org/hello-world (main) via github"),
            ("{{body.ref | shout}}", "{{body.ref | shout}}"),
            ("open {{body.ref", "open {{body.ref"),
            ("no placeholders", "no placeholders"),
            ("}} {{body.size}}}}", "}} 2}}"),
            ("ünïcödé {{body.pusher.name}} ✓", "ünïcödé octocat ✓"),
            ("", ""),
        ];
        for (template, want) in cases {
            assert_eq!(render(template, &ev), want, "{template}");
        }
    }
}
