//! The email channel end to end against real servers on 127.0.0.1: Dovecot for IMAP
//! (tests/support/dovecot.rs, mail put in as a receiving server delivers it, with its
//! `Authentication-Results`) and an SMTP sink that records what Butler sends
//! (tests/support/smtp_sink.rs); the fake LLM is the model. `turns.rs`: answers in the thread,
//! trust, restarts, sessions per thread, approvals by reply, doctor; `links.rs`: approvals by
//! the signed links in the request.

#[path = "../support/mod.rs"]
mod support;

mod links;
mod turns;

use butler::channels::{AllowedSender, EmailConfig, MailServer, MailTls};
use butler::config::Secret;
use support::app::{config_in, TestApp};
use support::dovecot::Dovecot;
use support::fake_llm::FakeLlm;
use support::smtp_sink::SmtpSink;

pub const BUTLER: &str = "butler@example.test";
pub const PASSWORD: &str = "imap-secret-7";
pub const ALICE: &str = "alice@example.com";
pub const BOB: &str = "bob@example.com";

/// `[channels.email]` for the servers.
pub fn email(imap: &Dovecot, smtp: &SmtpSink) -> EmailConfig {
    let server = |port: u16, user: &str, password: &str| MailServer {
        host: "127.0.0.1".into(),
        port,
        tls: MailTls::None,
        user: user.into(),
        password: Secret::new(password),
        token_command: None,
    };
    EmailConfig {
        address: BUTLER.into(),
        imap: server(imap.port, BUTLER, PASSWORD),
        smtp: server(smtp.port, "", ""),
        folder: "INBOX".into(),
        allowed: vec![AllowedSender::Address(ALICE.into()), AllowedSender::Address(BOB.into())],
        authserv_id: Some("mx.example.test".into()),
        since_days: 3,
    }
}

/// A mail as the receiving server stores it: `from`, with its `Authentication-Results`
/// (DKIM passing for the sender's domain unless `authenticated` is false), `id`, `subject`, the
/// thread headers in `extra`, and `body`.
pub fn mail(from: &str, authenticated: bool, id: &str, subject: &str, extra: &str, body: &str) -> Vec<u8> {
    let domain = from.rsplit_once('@').map(|(_, d)| d).unwrap_or_default();
    let results = if authenticated {
        format!("mx.example.test; dkim=pass header.d={domain} header.s=s1; spf=pass smtp.mailfrom={from}")
    } else {
        format!("mx.example.test; dkim=none; spf=softfail smtp.mailfrom={from}")
    };
    format!(
        "Authentication-Results: {results}\r\nFrom: <{from}>\r\nTo: {BUTLER}\r\nSubject: {subject}\r\n\
         Message-ID: <{id}>\r\nDate: {}\r\n{extra}Content-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n",
        now_rfc2822()
    )
    .into_bytes()
}

fn now_rfc2822() -> String {
    chrono::Utc::now().format("%a, %d %b %Y %H:%M:%S +0000").to_string()
}

/// Butler with email on `dir` (fresh when `None`), Alice the owner and Bob allowed.
pub async fn app(
    imap: &Dovecot,
    smtp: &SmtpSink,
    llm: &FakeLlm,
    dir: Option<tempfile::TempDir>,
    tools: Vec<std::sync::Arc<dyn butler::tools::Tool>>,
) -> TestApp {
    app_tuned(imap, smtp, llm, dir, tools, |_| {}).await
}

/// [`app`] with `tune` applied to its config first.
pub async fn app_tuned(
    imap: &Dovecot,
    smtp: &SmtpSink,
    llm: &FakeLlm,
    dir: Option<tempfile::TempDir>,
    tools: Vec<std::sync::Arc<dyn butler::tools::Tool>>,
    tune: impl FnOnce(&mut butler::config::Config),
) -> TestApp {
    let (mut cfg, dir) = config_in(Some(&llm.openai_url()), dir);
    tune(&mut cfg);
    cfg.channels.set("email", email(imap, smtp).to_table());
    cfg.access.owners = vec![format!("email:{ALICE}").parse().unwrap()];
    cfg.access.allow = vec![format!("email:{BOB}").parse().unwrap()];
    TestApp::start_with(cfg, Some(dir), tools).await
}

/// A running Butler with its mail servers and model.
pub struct Rig {
    pub app: TestApp,
    pub imap: Dovecot,
    pub smtp: SmtpSink,
    pub llm: FakeLlm,
}

impl Rig {
    pub async fn start(tools: Vec<std::sync::Arc<dyn butler::tools::Tool>>) -> Self {
        let imap = Dovecot::start(&[(BUTLER, PASSWORD)]).await;
        let smtp = SmtpSink::start().await;
        let llm = FakeLlm::start().await;
        let app = app(&imap, &smtp, &llm, None, tools).await;
        Self { app, imap, smtp, llm }
    }

    pub async fn deliver(&self, raw: &[u8]) {
        self.imap.deliver(BUTLER, PASSWORD, raw).await;
    }
}
