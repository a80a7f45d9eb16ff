//! Butler's email channel: IMAP in (IDLE, one reader at a time: `Caps::exclusive`), SMTP out
//! (lettre).
//!
//! - Intake (`imap`): the folder is synced at start and after every IDLE wake-up; a mail is
//!   handed to the ingress, then marked handled with a keyword in the mailbox (the cursor lives
//!   in the mailbox: nothing twice, nothing missed across restarts and replicas). Only senders
//!   on the allowed list whose mail the receiving server authenticated (DKIM or SPF, per
//!   sender) become events (`parse`).
//! - Files people attach: fetched from the mailbox ([`EmailFiles`]).
//! - Output (`send`): a reply in the thread, plain text plus HTML (`butler_channel::markdown_html`), files attached, a
//!   `Message-ID` derived from the outbox key.
//!
//! This crate knows mail and nothing else: it must never use SQL, Redis, an LLM or the root
//! crate, and it never decides what to say.

mod files;
mod imap;
pub mod parse;
pub mod send;

pub use files::EmailFiles;
pub use imap::HANDLED;
pub use parse::{Proof, Sender, CHANNEL};

use butler_channel::{Caps, Channel, ChannelError, Ingress, MessageRef, Outbound, TextFormat};
use lettre::{AsyncSmtpTransport, Tokio1Executor};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How a connection is secured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tls {
    /// TLS from the first byte (IMAP 993, SMTP 465).
    Implicit,
    /// Plain, then STARTTLS (SMTP 587; IMAP uses implicit TLS instead).
    StartTls,
    /// No TLS: only for a server on this machine or a private network.
    None,
}

/// An IMAP or SMTP server and the login for it: a password, or an OAuth2 access token printed by
/// `token_command` (XOAUTH2; run at each login, so the command's own cache decides how often a
/// token is fetched). Debug masks the password.
#[derive(Clone)]
pub struct Server {
    pub host: String,
    pub port: u16,
    pub tls: Tls,
    pub user: String,
    pub password: String,
    pub token_command: Option<Vec<String>>,
}

impl Server {
    /// A fresh access token from `token_command`; `None` when the login is a password.
    pub(crate) async fn token(&self) -> Result<Option<String>, ChannelError> {
        let Some(command) = self.token_command.as_ref().filter(|c| !c.is_empty()) else { return Ok(None) };
        let run = tokio::process::Command::new(&command[0]).args(&command[1..]).kill_on_drop(true).output();
        let out = tokio::time::timeout(Duration::from_secs(30), run)
            .await
            .map_err(|_| ChannelError::Unauthorized("the token command took over 30 seconds".into()))?
            .map_err(|e| ChannelError::Unauthorized(format!("the token command cannot run: {}", e.kind())))?;
        let token = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !out.status.success() || token.is_empty() {
            return Err(ChannelError::Unauthorized(format!(
                "the token command failed ({}) or printed nothing",
                out.status
            )));
        }
        Ok(Some(token))
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("tls", &self.tls)
            .field("user", &self.user)
            .field("password", &"********")
            .field("token_command", &self.token_command)
            .finish()
    }
}

/// Everything the adapter needs, mapped from `[channels.email]` by the root's glue.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Butler's own address (the `From` of its mail).
    pub address: String,
    pub imap: Server,
    pub smtp: Server,
    /// The folder read (`INBOX`).
    pub folder: String,
    /// Who may mail Butler, and what their mail must prove.
    pub senders: Vec<Sender>,
    /// The receiving server's authserv-id in `Authentication-Results`; `None`: the topmost.
    pub authserv_id: Option<String>,
    /// How far back a sync looks, in days.
    pub since_days: u32,
}

/// Why the channel could not start (or `butler doctor`'s check failed).
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("the IMAP server at {host} refused the login: {why}")]
    ImapLogin { host: String, why: String },
    #[error("cannot reach the IMAP server at {host}: {error}")]
    ImapUnreachable { host: String, error: String },
    #[error("the IMAP server at {0} has no IDLE: new mail would only be seen at each reconnect")]
    NoIdle(String),
    #[error("the SMTP server at {host} refused: {error}")]
    Smtp { host: String, error: String },
}

/// What intake saw of a thread.
#[derive(Clone, Debug)]
pub(crate) struct Thread {
    pub subject: String,
    /// The newest mail of the person in it (`Message-ID` without `<>`).
    pub newest: Option<String>,
}

/// The email channel.
pub struct EmailChannel {
    settings: Settings,
    /// The SMTP transport, when its login is a password (with a token command one is built
    /// per mail, with a fresh token).
    smtp: Option<AsyncSmtpTransport<Tokio1Executor>>,
    /// Per thread root `Message-ID`, seen at intake: its subject and the newest mail in it (a
    /// bounded cache: the subject is looked up in the mailbox when missing, and an answer
    /// replies to the root then).
    threads: Mutex<HashMap<String, Thread>>,
    /// Web links answering a request's choices (`[server] public_url` set), beside the reply form.
    links: std::sync::OnceLock<Arc<dyn butler_channel::AnswerLinks>>,
}

impl EmailChannel {
    pub fn new(settings: Settings) -> Result<Arc<Self>, ConnectError> {
        let smtp = match settings.smtp.token_command {
            Some(_) => None,
            None => Some(
                send::transport(&settings.smtp, None)
                    .map_err(|error| ConnectError::Smtp { host: settings.smtp.host.clone(), error })?,
            ),
        };
        Ok(Arc::new(Self { settings, smtp, threads: Mutex::new(HashMap::new()), links: Default::default() }))
    }

    /// Lists a web link per choice under each request (set once, before the first send).
    pub fn set_links(&self, links: Arc<dyn butler_channel::AnswerLinks>) {
        let _ = self.links.set(links);
    }

    /// How the files people mail are fetched (for `Built.files`).
    pub fn files(&self) -> Arc<EmailFiles> {
        Arc::new(EmailFiles::new(self.settings.clone()))
    }

    pub(crate) fn rules(&self) -> parse::Rules {
        parse::Rules {
            address: self.settings.address.clone(),
            senders: self.settings.senders.clone(),
            authserv_id: self.settings.authserv_id.clone(),
        }
    }

    /// Remembers a thread's subject and newest mail for the answer.
    pub(crate) fn remember(&self, mail: &parse::Mail) {
        let Some(root) = &mail.event.conversation.thread else { return };
        let mut threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        if threads.len() > 10_000 {
            threads.clear();
        }
        let thread =
            threads.entry(root.clone()).or_insert_with(|| Thread { subject: mail.subject.clone(), newest: None });
        thread.newest = mail.event.message_id.clone();
    }

    pub(crate) fn thread(&self, root: &str) -> Option<Thread> {
        self.threads.lock().unwrap_or_else(|e| e.into_inner()).get(root).cloned()
    }
}

/// `butler doctor`: the IMAP login and IDLE, and the SMTP login.
pub async fn check(settings: &Settings) -> Result<(), ConnectError> {
    let host = settings.imap.host.clone();
    match imap::has_idle(&settings.imap).await {
        Ok(true) => {}
        Ok(false) => return Err(ConnectError::NoIdle(host)),
        Err(ChannelError::Unauthorized(why)) => return Err(ConnectError::ImapLogin { host, why }),
        Err(e) => return Err(ConnectError::ImapUnreachable { host, error: e.to_string() }),
    }
    let smtp_host = settings.smtp.host.clone();
    let token = settings
        .smtp
        .token()
        .await
        .map_err(|e| ConnectError::Smtp { host: smtp_host.clone(), error: e.to_string() })?;
    let smtp = send::transport(&settings.smtp, token)
        .map_err(|error| ConnectError::Smtp { host: smtp_host.clone(), error })?;
    match smtp.test_connection().await {
        Ok(true) => Ok(()),
        Ok(false) => Err(ConnectError::Smtp { host: smtp_host, error: "it did not answer".into() }),
        Err(e) => Err(ConnectError::Smtp { host: smtp_host, error: e.to_string() }),
    }
}

#[async_trait::async_trait]
impl Channel for EmailChannel {
    fn name(&self) -> &str {
        CHANNEL
    }

    fn caps(&self) -> Caps {
        Caps {
            buttons: false,
            edit: false,
            max_len: 100_000,
            typing: false,
            min_edit_interval: Duration::from_secs(1),
            format: TextFormat::Native,
            exclusive: true,
            reply_window: false,
        }
    }

    async fn send(&self, msg: &Outbound) -> Result<MessageRef, ChannelError> {
        let id = self.send_mail(msg).await?;
        Ok(MessageRef { conversation: msg.conversation.clone(), id })
    }

    /// Mail cannot be changed once sent: the caller sends a new one.
    async fn edit(&self, _target: &MessageRef, _msg: &Outbound) -> Result<(), ChannelError> {
        Err(ChannelError::NotFound("a sent mail cannot be edited".into()))
    }

    async fn run(&self, ingress: Arc<dyn Ingress>, cancel: CancellationToken) -> Result<(), ChannelError> {
        self.receive(ingress, cancel).await
    }
}
