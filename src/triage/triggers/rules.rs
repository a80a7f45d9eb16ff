//! Trigger rules: field paths into an event (`headers.x-github-event`, `body.commits.0.message`)
//! and the `when` matching of `[[triggers.rules]]` (strings with `*` wildcards, numbers,
//! booleans, lists of alternatives). The first rule whose every entry matches decides.
//!
//! Pure functions over JSON: nothing here may do I/O, and a missing field never matches
//! (rather than erroring).

use crate::config::TriggerRule;
use serde_json::Value;

/// The value at `path` in `root`: keys separated by `.`; a numeric segment also indexes an array.
/// Header names (`headers.X-GitHub-Event`) are matched lowercase, as they are stored.
pub fn lookup<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    let mut segments = path.split('.');
    let first = segments.next()?;
    let mut here = root.get(first)?;
    let lower = first == "headers";
    for seg in segments {
        let seg = if lower { seg.to_ascii_lowercase() } else { seg.to_string() };
        here = match here {
            Value::Object(map) => map.get(&seg)?,
            Value::Array(items) => items.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(here)
}

/// Whether `actual` (absent: `None`) satisfies `expected`.
pub fn matches(expected: &Value, actual: Option<&Value>) -> bool {
    let Some(actual) = actual else { return false };
    match expected {
        Value::Array(alternatives) => alternatives.iter().any(|e| matches(e, Some(actual))),
        Value::String(pattern) => match actual {
            Value::String(s) => wildcard(pattern, s),
            Value::Number(n) => wildcard(pattern, &n.to_string()),
            Value::Bool(b) => wildcard(pattern, if *b { "true" } else { "false" }),
            _ => false,
        },
        Value::Number(want) => match (actual, want.as_f64()) {
            (Value::Number(got), Some(want)) => got.as_f64() == Some(want),
            _ => false,
        },
        Value::Bool(want) => actual.as_bool() == Some(*want),
        Value::Null | Value::Object(_) => false,
    }
}

/// `*` matches any run of characters (also none); everything else matches itself exactly.
pub fn wildcard(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

/// The first rule whose every `when` entry matches `event` (0-based index).
pub fn first_match<'a>(rules: &'a [TriggerRule], event: &Value) -> Option<(usize, &'a TriggerRule)> {
    rules.iter().enumerate().find(|(_, rule)| rule.when.iter().all(|(path, want)| matches(want, lookup(event, path))))
}

/// Why rule `index` (0-based) matched, for the decision record:
/// `rule 2: headers.x-github-event = push, body.ref = refs/heads/main`.
pub fn describe(index: usize, rule: &TriggerRule) -> String {
    if rule.when.is_empty() {
        return format!("rule {}: matches every event", index + 1);
    }
    let parts: Vec<String> = rule.when.iter().map(|(path, want)| format!("{path} = {}", plain(want))).collect();
    format!("rule {}: {}", index + 1, parts.join(", "))
}

/// A value as plain text: strings without quotes, lists as `a | b`, the rest as JSON.
pub fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Array(items) => items.iter().map(plain).collect::<Vec<_>>().join(" | "),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TriggerAction;
    use serde_json::json;

    fn event() -> Value {
        json!({
            "headers": {"x-github-event": "push", "content-type": "application/json"},
            "body": {
                "ref": "refs/heads/main",
                "size": 2,
                "forced": false,
                "repository": {"full_name": "octo-org/hello-world", "stargazers_count": 0},
                "commits": [{"message": "Fix the build"}, {"message": "Add tests"}],
                "weird": {"0": "key that looks like an index"}
            }
        })
    }

    #[test]
    fn lookup_paths() {
        let ev = event();
        let cases: &[(&str, Option<Value>)] = &[
            ("headers.x-github-event", Some(json!("push"))),
            ("headers.X-GitHub-Event", Some(json!("push"))),
            ("body.repository.full_name", Some(json!("octo-org/hello-world"))),
            ("body.commits.0.message", Some(json!("Fix the build"))),
            ("body.commits.1.message", Some(json!("Add tests"))),
            ("body.commits.2.message", None),
            ("body.commits.x", None),
            ("body.commits.-1", None),
            ("body.weird.0", Some(json!("key that looks like an index"))),
            ("body.size", Some(json!(2))),
            ("body.ref.more", None),
            ("body.missing", None),
            ("nothing", None),
            ("body", Some(ev["body"].clone())),
        ];
        for (path, want) in cases {
            assert_eq!(lookup(&ev, path), want.as_ref(), "{path}");
        }
    }

    #[test]
    fn wildcards() {
        let cases = [
            ("main", "main", true),
            ("main", "mainline", false),
            ("*", "", true),
            ("*", "anything", true),
            ("refs/heads/*", "refs/heads/main", true),
            ("refs/heads/*", "refs/tags/v1", false),
            ("*/hello-*", "octo-org/hello-world", true),
            ("*-org/*", "octo-org/hello-world", true),
            ("a*b*c", "abc", true),
            ("a*b*c", "aXbYc", true),
            ("a*b*c", "acb", false),
            ("ab*ba", "aba", false),
            ("*.md", "README.md", true),
            ("Main", "main", false),
        ];
        for (pattern, text, want) in cases {
            assert_eq!(wildcard(pattern, text), want, "{pattern} ~ {text}");
        }
    }

    #[test]
    fn matching_values() {
        let ev = event();
        let cases: &[(&str, Value, bool)] = &[
            ("headers.x-github-event", json!("push"), true),
            ("headers.x-github-event", json!("issues"), false),
            ("headers.x-github-event", json!(["issues", "push"]), true),
            ("headers.x-github-event", json!(["issues", "pull_request"]), false),
            ("body.ref", json!("refs/heads/*"), true),
            ("body.size", json!(2), true),
            ("body.size", json!(2.0), true),
            ("body.size", json!(3), false),
            ("body.size", json!("2"), true),
            ("body.size", json!([1, 2]), true),
            ("body.forced", json!(false), true),
            ("body.forced", json!(true), false),
            ("body.forced", json!("false"), true),
            ("body.missing", json!("*"), false),
            ("body.ref", json!(false), false),
            ("body.repository", json!("*"), false),
            ("body.commits.0.message", json!("Fix*"), true),
        ];
        for (path, want, expected) in cases {
            assert_eq!(matches(want, lookup(&ev, path)), *expected, "{path} = {want}");
        }
    }

    fn rule(when: Value, action: TriggerAction) -> TriggerRule {
        TriggerRule {
            when: serde_json::from_value(when).unwrap(),
            action,
            target: None,
            conversation: None,
            template: None,
            instructions: None,
        }
    }

    #[test]
    fn first_matching_rule_decides() {
        let rules = vec![
            rule(json!({"headers.x-github-event": "issues"}), TriggerAction::Agent),
            rule(json!({"headers.x-github-event": "push", "body.ref": "refs/heads/dev"}), TriggerAction::Drop),
            rule(json!({"headers.x-github-event": "push", "body.ref": "refs/heads/main"}), TriggerAction::Notify),
            rule(json!({}), TriggerAction::Drop),
        ];
        let ev = event();
        let (i, r) = first_match(&rules, &ev).unwrap();
        assert_eq!((i, r.action), (2, TriggerAction::Notify));
        assert_eq!(describe(i, r), "rule 3: body.ref = refs/heads/main, headers.x-github-event = push");
        let other = json!({"headers": {"x-github-event": "star"}, "body": {}});
        assert_eq!(first_match(&rules, &other).map(|(i, _)| i), Some(3));
        assert_eq!(describe(3, &rules[3]), "rule 4: matches every event");
        assert!(first_match(&rules[..3], &other).is_none());
        assert_eq!(plain(&json!(["a", 1, true])), "a | 1 | true");
    }
}
