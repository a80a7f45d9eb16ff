//! Point 8: `butler doctor` checks the bot token with auth.test and that Slack can reach
//! Butler (a signing secret, or an app token for Socket Mode); config validation refuses a
//! Slack section that could never work; the README walks through the app setup with the
//! manifest under deploy/.

use crate::support::fake_slack::{FakeSlack, APP_TOKEN, BOT_TOKEN};
use butler::channels::SlackConfig;
use butler::config::{Config, Secret};

fn slack(api_url: &str, token: &str, secret: Option<&str>, app: Option<&str>) -> Config {
    let mut cfg = Config::default();
    let section = SlackConfig {
        bot_token: Secret::new(token),
        signing_secret: secret.map(Secret::new),
        app_token: app.map(Secret::new),
        api_url: api_url.into(),
        working_reaction: "eyes".into(),
        remembered_threads: 100,
        link_previews: false,
    };
    cfg.channels.set("slack", section.to_table());
    cfg
}

async fn check(cfg: &Config) -> Result<String, (String, String)> {
    let checks = butler::channels::builtin().doctor(&cfg.channels).await;
    let (what, result) = checks.into_iter().find(|(w, _)| w == "slack").expect("a slack check");
    assert_eq!(what, "slack");
    result
}

#[tokio::test]
async fn doctor_checks_the_token_and_how_slack_reaches_butler() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fake = FakeSlack::start().await;
    let url = fake.api_url();
    let ok = check(&slack(&url, BOT_TOKEN, Some("s3cret"), None)).await.expect("passes");
    assert!(ok.contains("auth.test accepted") && ok.contains("UBUTLER") && ok.contains("signing_secret"), "{ok}");
    let ok = check(&slack(&url, BOT_TOKEN, None, Some(APP_TOKEN))).await.expect("passes");
    assert!(ok.contains("Socket Mode"), "{ok}");
    assert_eq!(fake.calls_of("auth.test").len(), 2);

    let cases = [
        (slack(&url, "xoxb-wrong", Some("s"), None), "invalid_auth", "bot_token"),
        (slack(&url, BOT_TOKEN, None, None), "neither signing_secret nor app_token", "signing_secret"),
        (slack(&url, BOT_TOKEN, Some(""), None), "neither signing_secret nor app_token", "app_token"),
        (slack(&url, BOT_TOKEN, None, Some(BOT_TOKEN)), "not an app-level token", "connections:write"),
        (
            slack("http://127.0.0.1:9/api", BOT_TOKEN, Some("s"), None),
            "auth.test failed at http://127.0.0.1:9/api: temporary failure: the request did not get through: ",
            "api_url",
        ),
    ];
    for (cfg, problem, fix) in cases {
        let (p, f) = check(&cfg).await.expect_err("fails");
        assert!(p.contains(problem), "{p}");
        assert!(f.contains(fix), "{f}");
        assert!(!p.contains(BOT_TOKEN) && !f.contains(BOT_TOKEN), "no secret printed");
        assert!(
            !p.contains("Some(") && !p.contains("Error {") && !p.contains("Error("),
            "a sentence, not a Debug value: {p}"
        );
    }
}

#[test]
fn config_validation_names_the_missing_keys() {
    let cases = [
        (slack("https://slack.com/api", "", Some("s"), None), "channels.slack.bot_token"),
        (slack("https://slack.com/api", "xoxb-1", None, None), "needs signing_secret"),
        (slack("slack.com/api", "xoxb-1", Some("s"), None), "channels.slack.api_url"),
    ];
    for (cfg, want) in cases {
        let err = butler::app::check_config(&cfg).expect_err("invalid").to_string();
        assert!(err.contains(want), "{err}");
    }
    butler::app::check_config(&slack("https://slack.com/api", "xoxb-1", None, Some("xapp-1")))
        .expect("Socket Mode alone is fine");
}

#[test]
fn readme_and_manifest_walk_through_the_setup() {
    let root = env!("CARGO_MANIFEST_DIR");
    let manifest =
        std::fs::read_to_string(format!("{root}/deploy/slack-manifest.yaml")).expect("deploy/slack-manifest.yaml");
    for needed in [
        "app_mentions:read",
        "chat:write",
        "im:history",
        "im:read",
        "im:write",
        "channels:history",
        "groups:history",
        "reactions:write",
        "users:read",
        "commands",
        "channels:read",
        "groups:read",
        "app_mention",
        "message.im",
        "message.channels",
        "message.groups",
        "/channels/slack/events",
        "/channels/slack/interactive",
        "/channels/slack/commands",
        "command: /butler",
        "socket_mode_enabled",
    ] {
        assert!(manifest.contains(needed), "the manifest lacks {needed}");
    }
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let start = readme.find("\n## Slack").expect("a Slack section in the README");
    let section = &readme[start..];
    let section = &section[..section[1..].find("\n## ").map_or(section.len(), |e| e + 1)];
    for needed in [
        "deploy/slack-manifest.yaml",
        "bot_token",
        "signing_secret",
        "app_token",
        "Socket Mode",
        "/channels/slack/events",
        "/channels/slack/interactive",
        "/butler",
        "butler doctor",
        "conversation = \"slack:",
    ] {
        assert!(section.contains(needed), "the README's Slack section lacks {needed}");
    }
}
