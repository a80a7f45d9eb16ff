//! `[channels.<name>]` of the platform channels: config keeps each as written and the channel
//! registry reads and checks it, so an unknown name, a channel built without its feature, a
//! bad key or value, an override and a secret behave as when config had a type per channel.

use super::parse;
use crate::config::{ConfigError, Problems};

/// The problems of the full check (`app::check_config`), as (key, message).
fn problems(text: &str, vars: &[(&str, &str)]) -> Vec<(String, String)> {
    let config = parse(text, vars).unwrap_or_else(|e| panic!("{text}: {e}"));
    match crate::app::check_config(&config) {
        Ok(()) => vec![],
        Err(ConfigError::Invalid { problems, .. }) => problems.into_iter().map(|p| (p.key, p.message)).collect(),
        Err(e) => panic!("{text}: {e}"),
    }
}

#[test]
fn channel_sections_are_read_and_checked_by_their_channel() {
    // (file, overrides, the problem's key, fragments of its message); no key: no problem.
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], Option<&'a str>, &'a [&'a str]);
    let cases: &[Case] = &[
        ("[channels.telegram]\ntoken = \"1:a\"", &[], None, &[]),
        (
            "[channels.foo]\ntoken = \"s3cr3t\"",
            &[],
            Some("channels.foo"),
            &["not a channel Butler knows", "web, telegram, slack, discord"],
        ),
        ("[channels.telgram]\ntoken = \"s3cr3t\"", &[], Some("channels.telgram"), &["did you mean `telegram`"]),
        ("[channels.webb]\ntoken = \"s3cr3t\"", &[], Some("channels.webb"), &["did you mean `web`"]),
        ("", &[("BUTLER_CHANNELS__WEBB__TOKEN", "s3cr3t")], Some("channels.webb"), &["BUTLER_CHANNELS__WEBB__TOKEN"]),
        (
            "[channels.telegram]\ntoken = \"1:a\"\npoll_timout_secs = 3",
            &[],
            Some("channels.telegram.poll_timout_secs"),
            &["is not a key of [channels.telegram]", "did you mean `channels.telegram.poll_timeout_secs`"],
        ),
        ("[channels.discord]\napi_url = \"https://discord.com\"", &[], Some("channels.discord.token"), &["missing"]),
        (
            "[channels.telegram]\ntoken = \"1:a\"\npoll_timeout_secs = \"soon\"",
            &[],
            Some("channels.telegram.poll_timeout_secs"),
            &["u32"],
        ),
        ("[channels.slack]\nbot_token = 5\napp_token = \"xapp-1\"", &[], Some("channels.slack.bot_token"), &["string"]),
        // Overrides: a section from the environment alone, and a token that reads as a number.
        ("", &[("BUTLER_CHANNELS__TELEGRAM__TOKEN", "1:abc")], None, &[]),
        ("[channels.telegram]\ntoken = \"1:a\"", &[("BUTLER_CHANNELS__TELEGRAM__TOKEN", "123456")], None, &[]),
        (
            "[channels.telegram]\ntoken = \"1:a\"",
            &[("BUTLER_CHANNELS__TELEGRAM__POLL_TIMEOUT_SECS", "x")],
            Some("channels.telegram.poll_timeout_secs"),
            &["BUTLER_CHANNELS__TELEGRAM__POLL_TIMEOUT_SECS"],
        ),
        // The checks of a channel keep their keys.
        (
            "[channels.discord]\ntoken = \"t\"\npublic_key = \"abc\"",
            &[],
            Some("channels.discord.public_key"),
            &["64 hex"],
        ),
        ("[channels.telegram]\ntoken = \" \"", &[], Some("channels.telegram.token"), &["@BotFather"]),
        // A schedule may target a configured platform channel, not one that is not configured.
        (
            "[channels.slack]\nbot_token = \"x\"\napp_token = \"xapp-1\"\n[[schedules]]\nname = \"b\"\n\
             cron = \"0 8 * * *\"\nprompt = \"p\"\ntarget = \"slack:C1\"",
            &[],
            None,
            &[],
        ),
        (
            "[[schedules]]\nname = \"b\"\ncron = \"0 8 * * *\"\nprompt = \"p\"\ntarget = \"slack:C1\"",
            &[],
            Some("schedules[0].target"),
            &["`slack`, which this config does not run"],
        ),
    ];
    for (text, vars, key, fragments) in cases {
        let found = problems(text, vars);
        match key {
            None => assert!(found.is_empty(), "{text} {vars:?}: {found:?}"),
            Some(key) => {
                assert_eq!(found.len(), 1, "{text} {vars:?}: {found:?}");
                assert_eq!(found[0].0, *key, "{text} {vars:?}");
                for f in *fragments {
                    assert!(found[0].1.contains(f), "{text} {vars:?}: {f:?} not in {}", found[0].1);
                }
                assert!(!found[0].1.contains("s3cr3t"), "no secret in {}", found[0].1);
            }
        }
    }
}

#[test]
fn an_override_sets_a_channel_key() {
    let config = parse("[channels.telegram]\ntoken = \"1:a\"", &[("BUTLER_CHANNELS__TELEGRAM__TOKEN", "123456")]);
    let config = config.unwrap();
    let mut p = Problems::default();
    let section: crate::channels::TelegramConfig = config.channels.read("telegram", &mut p).expect("read");
    assert_eq!(section.token.expose(), "123456");
    let config = parse("", &[("BUTLER_CHANNELS__TELEGRAM__TOKEN", "9:xyz")]).unwrap();
    let section: crate::channels::TelegramConfig = config.channels.read("telegram", &mut p).expect("read");
    assert_eq!((section.token.expose(), section.api_url.as_str()), ("9:xyz", "https://api.telegram.org"));
}

#[test]
fn a_channel_built_without_its_feature_is_refused_naming_the_feature() {
    use crate::config::ChannelChecks;
    let config = parse("[channels.telegram]\ntoken = \"1:a\"", &[]).unwrap();
    let registry = crate::channels::Registry::default().without("telegram");
    let mut p = Problems::default();
    registry.check(&config.channels, &mut p);
    let lines = p.into_lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("channels.telegram: ") && lines[0].contains("`telegram` Cargo feature"), "{lines:?}");
}

#[test]
fn secrets_in_channel_sections_are_masked() {
    let text = "[channels.telegram]\ntoken = \"tg-s3cr3t\"\nwebhook_secret = \"hook-s3cr3t\"\n\
                [channels.slack]\nbot_token = \"xoxb-s3cr3t\"\nsigning_secret = \"sign-s3cr3t\"\n\
                [channels.discord]\ntoken = \"dc-s3cr3t\"\n";
    let vars = [("BUTLER_CHANNELS__SLACK__APP_TOKEN", "xapp-s3cr3t")];
    let config = parse(text, &vars).unwrap();
    let out = config.to_masked_toml();
    assert!(!out.contains("s3cr3t"), "{out}");
    for shown in ["[channels.telegram]", "[channels.slack]", "[channels.discord]", "token = \"********\""] {
        assert!(out.contains(shown), "{shown} missing from {out}");
    }
    assert!(!format!("{config:?}").contains("s3cr3t"), "Debug masks them too");
}

#[test]
fn replicas_compare_section_digests_without_secrets_or_their_own_keys() {
    let base = "[llm]\nmodel = \"m1\"\napi_key = \"sk-one\"\n\n[channels.matrix]\nhomeserver = \"https://m.example\"\n\
                user_id = \"@b:m.example\"\npassword = \"pw1\"\nstore_path = \"/r1\"\nallowed = []\n";
    let digests = |extra: &str, from: &str, to: &str| {
        let text = format!("{}{extra}", base.replace(from, to));
        parse(&text, &[]).unwrap().section_digests()
    };
    let mine = digests("", "", "");
    // (a change, the sections that then differ)
    let cases: &[(&str, &str, &str, &[&str])] = &[
        ("", "m1", "m2", &["llm"]),
        ("[skills]\ndirs = [\"/s\"]\n", "", "", &["skills"]),
        ("[server]\nlisten = \"127.0.0.1:9999\"\n", "", "", &[]),
        ("", "/r1", "/r2", &[]),
        ("", "sk-one", "sk-two", &[]),
        ("", "pw1", "pw2", &[]),
        ("", "https://m.example", "https://other.example", &["channels"]),
    ];
    for (extra, from, to, want) in cases {
        let theirs = digests(extra, from, to);
        let differ: Vec<&String> =
            mine.keys().chain(theirs.keys()).filter(|k| mine.get(*k) != theirs.get(*k)).collect();
        let mut differ: Vec<&str> = differ.into_iter().map(String::as_str).collect();
        differ.dedup();
        assert_eq!(differ, *want, "{extra}{from}->{to}");
    }
}
