//! Point 7: `butler doctor` checks the bot token with GET /users/@me (and the gateway budget
//! with GET /gateway/bot), passing with a good token and failing, with the fix, with a bad
//! one. `[channels.discord]` is validated: a token, a 64-hex public key, an http(s) api_url.

use crate::support::fake_discord::{FakeDiscord, BOT_ID, TOKEN};
use crate::support::fake_llm::FakeLlm;
use crate::support::proc::Deployment;
use butler::config::{parse_str, Env};

async fn doctor(token: &str, discord: &FakeDiscord, llm: &FakeLlm) -> (bool, String) {
    let dep = Deployment::new(&format!(
        "[llm]\nprovider = \"openai\"\nbase_url = \"{}\"\nmodel = \"fake-model\"\n\n[channels.discord]\ntoken = \"{token}\"\napi_url = \"{}\"\n",
        llm.openai_url(),
        discord.url()
    ));
    let out = tokio::task::spawn_blocking(move || dep.command(&["doctor"]).output().expect("run butler doctor"))
        .await
        .unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[tokio::test]
async fn doctor_checks_the_token_with_users_me() {
    let discord = FakeDiscord::start().await;
    let llm = FakeLlm::start().await;
    let (ok, out) = doctor(TOKEN, &discord, &llm).await;
    assert!(ok, "{out}");
    let line = out.lines().find(|l| l.contains("discord")).unwrap_or_default();
    assert_eq!(line, format!("[ ok ] discord: bot Butler ({BOT_ID}), 997 gateway sessions left today"));
    let calls = discord.calls();
    assert!(calls.iter().any(|c| c.path == "/api/v10/users/@me" && c.status == 200), "{calls:?}");

    let (ok, out) = doctor("not-the-token", &discord, &llm).await;
    assert!(!ok, "{out}");
    assert!(out.contains("[FAIL] discord:") && out.contains("401"), "{out}");
    assert!(out.contains("fix: set [channels.discord] token"), "{out}");
    assert!(!out.contains("not-the-token"), "the token is never printed:\n{out}");
}

#[test]
fn discord_config_is_validated() {
    let key = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
    let cases: &[(&str, Option<&str>)] = &[
        ("token = \"t\"", None),
        (&format!("token = \"t\"\npublic_key = \"{key}\"\napi_url = \"http://127.0.0.1:9\""), None),
        ("token = \" \"", Some("channels.discord.token")),
        ("token = \"t\"\npublic_key = \"abc\"", Some("channels.discord.public_key")),
        (&format!("token = \"t\"\npublic_key = \"{}\"", key.replace('d', "g")), Some("channels.discord.public_key")),
        ("token = \"t\"\napi_url = \"discord.com\"", Some("channels.discord.api_url")),
    ];
    for (section, want) in cases {
        let text = format!("[channels.discord]\n{section}\n");
        let cfg = parse_str(&text, "test", &Env::default()).unwrap();
        let problems = butler::app::check_config(&cfg).err().map(|e| e.to_string());
        match (want, problems) {
            (None, None) => {}
            (Some(key), Some(p)) => assert!(p.contains(key), "{section}: {p}"),
            (want, got) => panic!("{section}: want {want:?}, got {got:?}"),
        }
    }
    let missing = parse_str("[channels.discord]\napi_url = \"https://discord.com\"\n", "test", &Env::default());
    let missing = missing.and_then(|cfg| butler::app::check_config(&cfg));
    assert!(missing.unwrap_err().to_string().contains("token"));
}

/// The README's setup matches what the code needs: the privileged intent, the invite URL's
/// scopes and permissions, the interactions endpoint.
#[test]
fn readme_explains_the_application_setup() {
    let readme = include_str!("../../README.md");
    let section = &readme[readme.find("## Discord").expect("a Discord section")..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    let section = section.split_whitespace().collect::<Vec<_>>().join(" ");
    let permissions = butler_discord::INVITE_PERMISSIONS;
    // View Channels, Send Messages, Send Messages in Threads, Read Message History.
    assert_eq!(permissions, (1 << 10) | (1 << 11) | (1 << 38) | (1 << 16));
    for needed in [
        "Message Content Intent".to_string(),
        format!("({})", butler_discord::intents().bits()),
        "scope=bot+applications.commands".to_string(),
        format!("permissions={permissions}"),
        "View Channels, Send Messages, Send Messages in Threads and Read Message History".to_string(),
        "/channels/discord/interactions".to_string(),
        "Interactions Endpoint URL".to_string(),
        "butler doctor".to_string(),
    ] {
        assert!(section.contains(&needed), "the README's Discord section does not mention {needed:?}");
    }
}
