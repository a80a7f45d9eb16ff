//! Point 7: `butler doctor` checks the token with getMe and says what is wrong: a refused token
//! points at @BotFather, an unreachable Bot API at `api_url`. Also a channel that cannot start
//! says the same instead of running half-configured.

use crate::support::fake_telegram::{FakeTelegram, BOT_USERNAME};
use crate::support::proc::{free_port, Deployment};
use crate::{telegram, tls, TOKEN};
use butler::channels::TelegramConfig;
use butler::config::Secret;

async fn check(cfg: &TelegramConfig) -> Result<String, (String, String)> {
    crate::support::app::doctor_channel("telegram", cfg.to_table()).await
}

#[tokio::test]
async fn doctor_checks_the_token_with_get_me() {
    tls();
    let fake = FakeTelegram::start(TOKEN).await;
    let good = telegram(&fake);
    let ok = check(&good).await.expect("a good token passes");
    assert!(ok.contains(&format!("@{BOT_USERNAME}")) && ok.contains("long polling"), "{ok}");
    assert_eq!(fake.calls("getMe").len(), 1);

    let bad = TelegramConfig { token: Secret::new("123456:WRONG-xyz"), ..good.clone() };
    let (problem, fix) = check(&bad).await.expect_err("a refused token fails");
    assert!(problem.contains("refused the bot token"), "{problem}");
    assert!(fix.contains("check [channels.telegram] token with @BotFather"), "{fix}");
    assert!(!problem.contains("WRONG-xyz") && !fix.contains("WRONG-xyz"), "never prints the token");

    let gone = TelegramConfig { api_url: format!("http://127.0.0.1:{}", free_port()), ..good };
    let (problem, fix) = check(&gone).await.expect_err("an unreachable API fails");
    assert!(problem.contains("cannot reach the Bot API"), "{problem}");
    assert!(fix.contains("api_url") && fix.contains(&gone.api_url), "{fix}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_reports_a_refused_token_and_will_not_serve_with_it() {
    let fake = FakeTelegram::start(TOKEN).await;
    let dep = Deployment::new(&format!(
        "[channels.telegram]\ntoken = \"123456:WRONG-xyz\"\napi_url = \"{}\"\n",
        fake.api_url()
    ));
    let run = |args: &'static [&'static str], dep: Deployment| {
        tokio::task::spawn_blocking(move || {
            let out = dep.command(args).output().expect("run butler");
            (out, dep)
        })
    };
    let (out, dep) = run(&["doctor"], dep).await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(!out.status.success(), "{stdout}");
    let line = stdout.lines().find(|l| l.contains("telegram:")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(line.starts_with("[FAIL] telegram:"), "{stdout}");
    assert!(stdout.contains("check [channels.telegram] token with @BotFather"), "{stdout}");
    assert!(!stdout.contains("WRONG-xyz"), "the token is never printed");

    let (out, _dep) = run(&["serve"], dep).await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success());
    assert!(stderr.contains("telegram channel cannot start") && stderr.contains("@BotFather"), "{stderr}");
}
