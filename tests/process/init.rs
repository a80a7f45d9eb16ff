//! `butler init` in a pseudo-terminal: the answers are checked live (the fake LLM's model list
//! and a real call, the fake Bot API's getMe), a bad base URL, key or token is asked again with
//! the reason, secrets are never shown, the file written passes `butler config check`, and an
//! existing file is kept unless the answer is yes.

use crate::support::fake_llm::FakeLlm;
use crate::support::fake_telegram::FakeTelegram;
use crate::support::proc::clean_command;
use expectrl::Session;
use std::path::Path;
use std::time::Duration;

const KEY: &str = "sk-good-7f3a";
const TOKEN: &str = "123456:TEST-token";

/// A pty session of `butler init --config <path>` whose whole output is kept.
struct Pty {
    session: Session,
    seen: String,
}

impl Pty {
    fn start(home: &Path, config: &Path, vars: &[(&str, &str)]) -> Self {
        let mut cmd = clean_command(home);
        cmd.arg("init").arg("--config").arg(config).envs(vars.iter().copied());
        Self::on(Session::spawn(cmd).expect("spawn butler init in a pty"))
    }

    /// A session with the terminal's echo on, as in a real terminal (so anything not read
    /// hidden shows up in the output).
    fn on(mut session: Session) -> Self {
        session.set_expect_timeout(Some(Duration::from_secs(30)));
        session.get_process_mut().set_echo(true, Some(Duration::from_secs(5))).expect("echo on");
        Self { session, seen: String::new() }
    }

    /// Waits for `needle`; everything up to it is kept.
    fn expect(&mut self, needle: &str) {
        match self.session.expect(needle) {
            Ok(found) => {
                self.seen.push_str(&String::from_utf8_lossy(found.before()));
                self.seen.push_str(needle);
            }
            Err(e) => panic!("`{needle}` never came ({e}); output so far:\n{}", self.seen),
        }
    }

    fn answer(&mut self, prompt: &str, line: &str) {
        self.expect(prompt);
        self.session.send_line(line).unwrap();
    }

    /// Reads to the end and returns the exit code.
    fn finish(mut self) -> (Option<i32>, String) {
        if let Ok(found) = self.session.expect(expectrl::Eof) {
            self.seen.push_str(&String::from_utf8_lossy(found.as_bytes()));
        }
        let status = self.session.get_process().wait().unwrap();
        let code = match status {
            expectrl::WaitStatus::Exited(_, code) => Some(code),
            _ => None,
        };
        (code, self.seen)
    }
}

fn config_check(home: &Path, config: &Path, vars: &[(&str, &str)]) -> (bool, String, String) {
    let out = clean_command(home)
        .args(["config", "check", "--config"])
        .arg(config)
        .envs(vars.iter().copied())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_checks_each_answer_asks_again_and_writes_a_config_that_checks() {
    let llm = FakeLlm::start().await;
    llm.require_api_key(KEY);
    llm.serve_models(&["fake-model", "other-model"]);
    let telegram = FakeTelegram::start(TOKEN).await;
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("conf/butler.toml");
    let api_url = telegram.api_url();
    let (home_path, config_path, openai) = (home.path().to_path_buf(), config.clone(), llm.openai_url());
    let (code, seen) = tokio::task::spawn_blocking(move || {
        let vars = [("BUTLER_CHANNELS__TELEGRAM__API_URL", api_url.as_str()), ("TZ", "Asia/Tokyo")];
        let mut pty = Pty::start(&home_path, &config_path, &vars);
        pty.answer("Provider [1]: ", "1");
        // Nothing listens on port 9: asked again, with the reason.
        pty.answer("Base URL [https://api.openai.com/v1]", "http://127.0.0.1:9/v1");
        pty.answer("API key (hidden; Enter for none", "sk-wrong-key");
        pty.expect("✗ cannot reach the model provider at http://127.0.0.1:9/v1");
        pty.answer("Base URL [https://api.openai.com/v1]", &openai);
        // The wrong key (kept from the first round) is refused: the key is asked again.
        pty.expect("✗ the endpoint refused the key");
        pty.answer("API key (hidden; Enter for none", KEY);
        pty.expect("Models this endpoint serves:");
        pty.expect("2) other-model");
        pty.answer("Model [1]: ", "");
        pty.expect("✓ fake-model answered a test request");
        // A model nobody prices is named, with the keys to set.
        pty.expect("! price: fake-model (llm): no known price");
        pty.answer("Write it into the file (f), or as ${OPENAI_API_KEY}", "f");
        // The machine's zone is suggested (TZ here); a wrong name is asked again.
        pty.answer("Your time zone [Asia/Tokyo]: ", "Mars/Olympus");
        pty.expect("not a time zone name");
        pty.answer("Your time zone [Asia/Tokyo]: ", "America/New_York");
        // Recall by meaning: off unless asked for; the chat model's server and key are offered.
        pty.expect("It sends each memory");
        pty.answer("Turn on recall by meaning? [y/N]: ", "y");
        pty.answer("Embeddings base URL [", "");
        pty.answer("Embedding model [text-embedding-3-small]: ", "fake-embed");
        pty.expect("✓ fake-embed embeds in 64 dimensions");
        pty.answer("Set up Telegram? [y/N]: ", "y");
        pty.answer("Bot token from @BotFather", "999:wrong");
        pty.expect("✗ Telegram refused the token");
        pty.answer("Bot token from @BotFather", TOKEN);
        pty.expect("✓ Telegram bot @");
        pty.answer("Write it into the file (f), or as ${TELEGRAM_BOT_TOKEN}", "e");
        pty.expect("✓ wrote");
        pty.finish()
    })
    .await
    .unwrap();
    assert_eq!(code, Some(0), "{seen}");
    for secret in [KEY, "sk-wrong-key", TOKEN, "999:wrong"] {
        assert!(!seen.contains(secret), "the secret {secret} was shown:\n{seen}");
    }
    assert!(seen.contains("export TELEGRAM_BOT_TOKEN"), "{seen}");
    assert!(seen.contains("http://127.0.0.1:9/v1\r\n"), "the echo was on for plain answers:\n{seen}");
    // The person running init is the owner: a one-time code for their own account.
    assert!(seen.contains("you are the owner: send `/link "), "{seen}");

    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.contains(&format!("api_key = \"{KEY}\"")), "{text}");
    assert!(text.contains("token = \"${TELEGRAM_BOT_TOKEN}\""), "{text}");
    assert!(text.contains("[agent]") && text.contains("timezone = \"America/New_York\""), "{text}");
    let embeddings = &text[text.find("[memory.embeddings]").expect("the embeddings section")..];
    for want in [
        format!("base_url = \"{}\"", llm.openai_url()),
        "model = \"fake-embed\"".into(),
        format!("api_key = \"{KEY}\""),
    ] {
        assert!(embeddings.contains(&want), "{want} in {embeddings}");
    }
    assert!(text.contains("# [channels.slack]") && text.contains("# [channels.discord]"), "{text}");
    let (ok, stdout, stderr) = config_check(home.path(), &config, &[("TELEGRAM_BOT_TOKEN", TOKEN)]);
    assert!(ok, "config check: {stderr}\n{text}");
    for want in ["model = \"fake-model\"", &format!("base_url = \"{}\"", llm.openai_url()), "[channels.telegram]"] {
        assert!(stdout.contains(want), "want {want} in\n{stdout}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&config).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the file holds a key: owner only");
    }
    assert!(llm.requests().iter().any(|r| r.api_key() == Some(KEY)), "a real model call was made with the key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_keeps_an_existing_file_unless_told_yes() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("butler.toml");
    for answer in ["n", ""] {
        std::fs::write(&config, "# mine\n").unwrap();
        let (home_path, config_path) = (home.path().to_path_buf(), config.clone());
        let (code, seen) = tokio::task::spawn_blocking(move || {
            let mut pty = Pty::start(&home_path, &config_path, &[]);
            pty.answer("already exists. Replace it? [y/N]: ", answer);
            pty.expect("nothing written");
            pty.finish()
        })
        .await
        .unwrap();
        assert_eq!(code, Some(1), "{answer:?}: {seen}");
        assert_eq!(std::fs::read_to_string(&config).unwrap(), "# mine\n", "{answer:?} kept the file");
        assert!(!seen.contains("Provider"), "{answer:?}: no questions after a no: {seen}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_for_a_local_server_needs_no_key_and_replaces_a_file_on_yes() {
    let llm = FakeLlm::start().await;
    llm.serve_models(&["llama3.1", "qwen"]);
    let home = tempfile::tempdir().unwrap();
    // No --config: the file goes where Butler looks for it from any folder.
    let xdg = home.path().join("xdg");
    let config = xdg.join("butler/butler.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "# old\n").unwrap();
    let (home_path, openai, xdg_s) = (home.path().to_path_buf(), llm.openai_url(), xdg.display().to_string());
    let (code, seen) = tokio::task::spawn_blocking(move || {
        let mut cmd = clean_command(&home_path);
        cmd.arg("init").env("XDG_CONFIG_HOME", &xdg_s);
        let mut pty = Pty::on(Session::spawn(cmd).unwrap());
        pty.answer("Replace it? [y/N]: ", "y");
        pty.answer("Provider [1]: ", "");
        pty.answer("Base URL", &openai);
        pty.answer("API key (hidden; Enter for none", "");
        pty.answer("Model [1]: ", "qwen");
        pty.expect("✓ qwen answered");
        pty.answer("Your time zone [", "");
        pty.answer("Turn on recall by meaning? [y/N]: ", "");
        pty.answer("Set up Telegram? [y/N]: ", "");
        pty.expect("✓ wrote");
        pty.finish()
    })
    .await
    .unwrap();
    assert_eq!(code, Some(0), "{seen}");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.contains("model = \"qwen\"") && !text.contains("api_key ="), "{text}");
    assert!(!text.contains("[memory.embeddings]"), "recall by meaning stays off unless asked for: {text}");
    // Found from another folder without --config.
    let elsewhere = home.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let out = clean_command(&elsewhere)
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", &xdg)
        .args(["config", "check"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.contains(&config.display().to_string()), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("model = \"qwen\""));
}
