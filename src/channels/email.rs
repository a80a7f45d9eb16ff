//! `[channels.email]` -> the email channel (channels/email: IMAP in, SMTP out): the section's
//! type and checks, its `butler init` section, its settings, its file source (attachments read
//! from the mailbox, under "email" in `Built.files`), which schedule targets it takes
//! (`email:<address>`), and the `butler doctor` check (the IMAP login and IDLE, the SMTP login).
//!
//! It must never hold mail logic or print a secret: mapping config to settings is all it does.

use super::built::{BuildError, Built, Check};
use super::registry::{Context, Platform};
use crate::config::{Problems, Secret};
use butler_channel::ConversationRef;
use butler_email::{ConnectError, EmailChannel, Proof, Sender, Server, Settings, Tls};
use serde::{Deserialize, Serialize};

/// How a connection is secured.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MailTls {
    #[default]
    Implicit,
    Starttls,
    None,
}

/// An IMAP or SMTP server and its login.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MailServer {
    pub host: String,
    pub port: u16,
    #[serde(default)]
    pub tls: MailTls,
    #[serde(default)]
    pub user: String,
    #[serde(default = "no_password")]
    pub password: Secret,
    /// Instead of a password: a command that prints an OAuth2 access token (XOAUTH2), e.g.
    /// `["gcloud", "auth", "print-access-token"]`; run at each login.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_command: Option<Vec<String>>,
}

/// What an allowed sender's mail must prove.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MailProof {
    #[default]
    DkimOrSpf,
    Dkim,
    Spf,
    None,
}

/// An allowed sender: an address or `@domain`, alone (DKIM or SPF) or with its proof.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(untagged)]
pub enum AllowedSender {
    Address(String),
    With { address: String, proof: MailProof },
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EmailConfig {
    /// Butler's address (the mailbox read, and the `From` of its mail).
    pub address: String,
    pub imap: MailServer,
    pub smtp: MailServer,
    #[serde(default = "inbox")]
    pub folder: String,
    /// Who may mail Butler (they still need `[access]` like on any channel).
    pub allowed: Vec<AllowedSender>,
    /// The receiving server's name in `Authentication-Results` (default: the topmost header).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authserv_id: Option<String>,
    /// How many days back a sync looks for mail not yet handled.
    #[serde(default = "since_days")]
    pub since_days: u32,
}

fn no_password() -> Secret {
    Secret::new("")
}

fn inbox() -> String {
    "INBOX".into()
}

fn since_days() -> u32 {
    3
}

impl EmailConfig {
    /// This section as a `[channels.email]` table, the passwords included.
    pub fn to_table(&self) -> toml::Table {
        let mut table = super::built::section_table(self, &[]);
        for (name, server) in [("imap", &self.imap), ("smtp", &self.smtp)] {
            if let Some(toml::Value::Table(t)) = table.get_mut(name) {
                t.insert("password".into(), toml::Value::String(server.password.expose().to_string()));
            }
        }
        table
    }
}

/// The email channel's registry entry.
pub struct Email;

fn server(s: &MailServer) -> Server {
    let tls = match s.tls {
        MailTls::Implicit => Tls::Implicit,
        MailTls::Starttls => Tls::StartTls,
        MailTls::None => Tls::None,
    };
    Server {
        host: s.host.trim().into(),
        port: s.port,
        tls,
        user: s.user.clone(),
        password: s.password.expose().into(),
        token_command: s.token_command.clone(),
    }
}

fn settings(cfg: &EmailConfig) -> Settings {
    let senders = cfg
        .allowed
        .iter()
        .map(|a| {
            let (pattern, proof) = match a {
                AllowedSender::Address(p) => (p.clone(), MailProof::DkimOrSpf),
                AllowedSender::With { address, proof } => (address.clone(), *proof),
            };
            let proof = match proof {
                MailProof::DkimOrSpf => Proof::DkimOrSpf,
                MailProof::Dkim => Proof::Dkim,
                MailProof::Spf => Proof::Spf,
                MailProof::None => Proof::None,
            };
            Sender { pattern: pattern.trim().to_ascii_lowercase(), proof }
        })
        .collect();
    Settings {
        address: cfg.address.trim().to_ascii_lowercase(),
        imap: server(&cfg.imap),
        smtp: server(&cfg.smtp),
        folder: cfg.folder.clone(),
        senders,
        authserv_id: cfg.authserv_id.clone(),
        since_days: cfg.since_days,
    }
}

fn explain(e: &ConnectError) -> (String, String) {
    let fix = match e {
        ConnectError::ImapLogin { .. } => {
            "check [channels.email.imap] user and password or token_command (an app password if the account has two factors)"
        }
        ConnectError::ImapUnreachable { .. } => {
            "check [channels.email.imap] host, port and tls, and that this machine can reach it"
        }
        ConnectError::NoIdle(_) => "use a mail server with IMAP IDLE (every common one has it)",
        ConnectError::Smtp { .. } => "check [channels.email.smtp] host, port, tls, user and password",
    };
    (e.to_string(), fix.to_string())
}

fn valid_address(a: &str) -> bool {
    let a = a.trim();
    matches!(a.split_once('@'), Some((l, d)) if !l.is_empty() && d.contains('.') && !a.contains(char::is_whitespace))
}

#[async_trait::async_trait]
impl Platform for Email {
    const NAME: &'static str = "email";
    const INIT: &'static str = "# Email (IMAP in, SMTP out): uncomment and fill in (README, Email).\n\
                                # [channels.email]\n# address = \"butler@example.com\"\n\
                                # allowed = [\"you@example.com\"]\n\
                                # imap = { host = \"imap.example.com\", port = 993, user = \"butler@example.com\", password = \"${EMAIL_PASSWORD}\" }\n\
                                # smtp = { host = \"smtp.example.com\", port = 465, user = \"butler@example.com\", password = \"${EMAIL_PASSWORD}\" }\n\n";
    type Section = EmailConfig;

    fn check(&self, e: &EmailConfig, p: &mut Problems) {
        if !valid_address(&e.address) {
            p.add("channels.email.address", "must be Butler's mail address, e.g. butler@example.com");
        }
        if e.allowed.is_empty() {
            p.add("channels.email.allowed", "is empty: list the addresses (or @domains) that may mail Butler");
        }
        for (i, a) in e.allowed.iter().enumerate() {
            let pattern = match a {
                AllowedSender::Address(p) | AllowedSender::With { address: p, .. } => p.trim(),
            };
            let domain = pattern.strip_prefix('@').is_some_and(|d| d.contains('.') && !d.contains('@'));
            if !valid_address(pattern) && !domain {
                p.add(
                    format!("channels.email.allowed[{i}]"),
                    "must be an address (alice@example.com) or a domain (@example.com)",
                );
            }
        }
        for (name, s) in [("imap", &e.imap), ("smtp", &e.smtp)] {
            let host = s.host.trim();
            if host.is_empty() {
                p.add(format!("channels.email.{name}.host"), "is empty");
            }
            if s.port == 0 {
                p.add(format!("channels.email.{name}.port"), "must be a port (IMAP 993, SMTP 465 or 587)");
            }
            let password = !s.password.expose().is_empty();
            match (&s.token_command, password) {
                (Some(c), _) if c.is_empty() || c[0].trim().is_empty() => {
                    p.add(format!("channels.email.{name}.token_command"), "is empty: the program and its arguments")
                }
                (Some(_), true) => p.add(
                    format!("channels.email.{name}.password"),
                    "and token_command are both set: keep one (token_command logs in with XOAUTH2)",
                ),
                (None, false) if !s.user.is_empty() => p.add(
                    format!("channels.email.{name}.password"),
                    "is empty: set it (or token_command for an OAuth2 account)",
                ),
                _ => {}
            }
            let local = host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
            if s.tls == MailTls::None && !local {
                p.add(
                    format!("channels.email.{name}.tls"),
                    "\"none\" sends the password in the clear: only for a server on this machine",
                );
            }
        }
        if e.imap.user.trim().is_empty() {
            p.add("channels.email.imap.user", "is empty: the mailbox's login (often the address)");
        }
        if e.imap.tls == MailTls::Starttls {
            p.add("channels.email.imap.tls", "IMAP takes \"implicit\" (port 993) here, not STARTTLS");
        }
        if !(1..=365).contains(&e.since_days) {
            p.add("channels.email.since_days", "must be 1-365");
        }
    }

    /// A person by address; a thread after `/` is the conversation's.
    fn refuse_target(&self, _: &EmailConfig, conversation: &ConversationRef) -> Option<String> {
        (!valid_address(&conversation.id))
            .then(|| format!("`{conversation}`: an email target is email:<address>, e.g. email:alice@example.com"))
    }

    async fn build(&self, cfg: EmailConfig, cx: &Context<'_>, built: &mut Built) -> Result<(), BuildError> {
        let channel = EmailChannel::new(settings(&cfg)).map_err(|e| {
            let (problem, fix) = explain(&e);
            BuildError { channel: "email", message: format!("{problem}; {fix} (`butler doctor` checks it)") }
        })?;
        if let Some(links) = &cx.links {
            channel.set_links(links.clone());
        }
        built.files.insert(butler_email::CHANNEL.to_string(), channel.files());
        built.channels.push(channel);
        Ok(())
    }

    async fn doctor(&self, cfg: &EmailConfig) -> Check {
        let what = "email".to_string();
        match butler_email::check(&settings(cfg)).await {
            Ok(()) => {
                (what, Ok(format!("IMAP {} (IDLE) and SMTP {} accepted the logins", cfg.imap.host, cfg.smtp.host)))
            }
            Err(e) => (what, Err(explain(&e))),
        }
    }
}

#[cfg(test)]
mod check_tests {
    use super::*;
    use crate::config::{Config, ConfigError};

    fn keys(e: &EmailConfig) -> Vec<String> {
        let mut c = Config::default();
        c.channels.set("email", e.to_table());
        match crate::app::check_config(&c) {
            Ok(()) => vec![],
            Err(ConfigError::Invalid { problems, .. }) => problems.into_iter().map(|p| p.key).collect(),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn email_settings_and_targets_are_checked() {
        let server = |host: &str, port| MailServer {
            host: host.into(),
            port,
            tls: MailTls::Implicit,
            user: "butler@example.com".into(),
            password: Secret::new("pw"),
            token_command: None,
        };
        let good = EmailConfig {
            address: "butler@example.com".into(),
            imap: server("imap.example.com", 993),
            smtp: server("smtp.example.com", 465),
            folder: "INBOX".into(),
            allowed: vec![
                AllowedSender::Address("you@example.com".into()),
                AllowedSender::With { address: "@example.org".into(), proof: MailProof::Dkim },
            ],
            authserv_id: None,
            since_days: 3,
        };
        let mut clear = good.clone();
        clear.imap.tls = MailTls::None;
        let mut both = good.clone();
        both.smtp.token_command = Some(vec!["print-token".into()]);
        let mut neither = good.clone();
        neither.imap.password = Secret::new("");
        let mut local = good.clone();
        local.imap = MailServer { host: "127.0.0.1".into(), tls: MailTls::None, ..good.imap.clone() };
        let mut oauth = good.clone();
        oauth.imap.password = Secret::new("");
        oauth.imap.token_command = Some(vec!["gcloud".into(), "auth".into(), "print-access-token".into()]);
        let cases: Vec<(EmailConfig, Vec<&str>)> = vec![
            (good.clone(), vec![]),
            (local, vec![]),
            (oauth, vec![]),
            (
                EmailConfig { address: "butler".into(), allowed: vec![], since_days: 0, ..good.clone() },
                vec!["channels.email.address", "channels.email.allowed", "channels.email.since_days"],
            ),
            (
                EmailConfig { allowed: vec![AllowedSender::Address("not an address".into())], ..good.clone() },
                vec!["channels.email.allowed[0]"],
            ),
            (clear, vec!["channels.email.imap.tls"]),
            (both, vec!["channels.email.smtp.password"]),
            (neither, vec!["channels.email.imap.password"]),
        ];
        for (cfg, want) in cases {
            assert_eq!(keys(&cfg), want, "{cfg:?}");
        }
        let targets =
            [("email:alice@example.com", true), ("email:alice@example.com/t1@x.y", true), ("email:alice", false)];
        for (target, ok) in targets {
            let c: ConversationRef = target.parse().unwrap();
            assert_eq!(Email.refuse_target(&good, &c).is_none(), ok, "{target}");
        }
    }
}
