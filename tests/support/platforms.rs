//! Every chat platform fake at once, as one person on each sees it, for the tests and benchmarks
//! that drive one `butler serve` through all of them: Telegram (long polling), Slack (the Events
//! API: signed webhooks in, the Web API out), Discord (REST and the gateway websocket), WhatsApp
//! (webhooks in, the Graph API out), Signal (signal-cli's event stream and JSON-RPC) and email (a
//! real Dovecot's IMAP and the SMTP sink).
//!
//! - [`Fakes::start`] starts them; [`Fakes::direct`] is where each listens, and
//!   [`Endpoints::sections`] the config sections that point Butler there (or through proxies put
//!   in between), with one owner per platform.
//! - [`Fake::say`]: that owner writes to Butler in their direct conversation (an email starts a
//!   thread of its own); [`Fake::said`]: what Butler has shown them there, in order, each with the
//!   approval request it carries, if any; [`Fake::approve`]: their "approve once" on such a
//!   request, the platform's way (a button, a 👍 reaction, an APPROVE reply).
//!
//! Used by `tests/process/faults_platforms.rs` and `benches/soak_one.rs`. It must never reach
//! anything but loopback.

use super::dovecot::Dovecot;
use super::fake_discord::payloads::{user as discord_user, UserMessage};
use super::fake_discord::{FakeDiscord, Msg};
use super::fake_signal::envelopes::{direct, reaction, uuid_for, ACCOUNT};
use super::fake_signal::FakeSignal;
use super::fake_slack::{payloads as slack, FakeSlack, Sender, BOT_TOKEN};
use super::fake_telegram::updates::{callback, dm, user as telegram_user};
use super::fake_telegram::FakeTelegram;
use super::fake_whatsapp::{
    button_reply, text as wa_text, FakeWhatsApp, APP_SECRET, PHONE_NUMBER_ID, TOKEN, VERIFY_TOKEN,
};
use super::smtp_sink::SmtpSink;
use serde_json::Value;

pub const TG_TOKEN: &str = "4343:platforms-test-token";
pub const TG_OWNER: i64 = 4343;
pub const SLACK_SECRET: &str = "platforms-slack-signing-secret";
pub const SLACK_OWNER: &str = "UOWNER";
pub const SLACK_DM: &str = "DOWNER";
pub const DISCORD_OWNER: &str = "2000000000000000042";
pub const DISCORD_DM: &str = "3000000000000000042";
pub const WA_OWNER: &str = "16505550142";
pub const SIGNAL_OWNER: &str = "+15550000142";
pub const MAIL_BUTLER: &str = "butler@example.test";
pub const MAIL_PASSWORD: &str = "platforms-imap-pw";
pub const MAIL_OWNER: &str = "owner@example.com";

/// The Signal timestamp of the `n`th thing a person sends (unique per `n`).
fn signal_ts(n: usize) -> i64 {
    1_700_000_000_000 + n as i64
}

/// The platforms, started; Telegram only when asked for.
pub struct Fakes {
    pub telegram: Option<FakeTelegram>,
    pub slack: FakeSlack,
    pub discord: FakeDiscord,
    pub whatsapp: FakeWhatsApp,
    pub signal: FakeSignal,
    pub imap: Dovecot,
    pub smtp: SmtpSink,
}

/// Where Butler reaches each platform: straight, or through something in between.
pub struct Endpoints {
    /// Telegram's Bot API URL; no Telegram section without it.
    pub telegram: Option<String>,
    pub slack: String,
    pub discord: String,
    pub whatsapp: String,
    pub signal: String,
    pub imap_port: u16,
    pub smtp_port: u16,
}

impl Fakes {
    pub async fn start(telegram: bool) -> Self {
        let telegram = if telegram { Some(FakeTelegram::start(TG_TOKEN).await) } else { None };
        let slack = FakeSlack::start().await;
        slack.add_user(SLACK_OWNER, "owner", "Owen");
        Self {
            telegram,
            slack,
            discord: FakeDiscord::start().await,
            whatsapp: FakeWhatsApp::start().await,
            signal: FakeSignal::start().await,
            imap: Dovecot::start(&[(MAIL_BUTLER, MAIL_PASSWORD)]).await,
            smtp: SmtpSink::start().await,
        }
    }

    /// Each platform where it listens.
    pub fn direct(&self) -> Endpoints {
        Endpoints {
            telegram: self.telegram.as_ref().map(FakeTelegram::api_url),
            slack: self.slack.api_url(),
            discord: self.discord.url(),
            whatsapp: self.whatsapp.api_url(),
            signal: self.signal.url(),
            imap_port: self.imap.port,
            smtp_port: self.smtp.port,
        }
    }

    /// One [`Fake`] per platform: Telegram (when started), Slack, Discord, WhatsApp, Signal, email.
    pub fn into_list(self) -> Vec<Fake> {
        let mut all: Vec<Fake> = self.telegram.into_iter().map(Fake::Telegram).collect();
        all.extend([
            Fake::Slack(self.slack),
            Fake::Discord(self.discord),
            Fake::WhatsApp(self.whatsapp),
            Fake::Signal(self.signal),
            Fake::Email(self.imap, self.smtp),
        ]);
        all
    }
}

impl Endpoints {
    /// The `[channels.*]` sections for these endpoints and `[access]` with each platform's owner.
    pub fn sections(&self) -> String {
        let (imap_port, smtp_port) = (self.imap_port, self.smtp_port);
        let mut sections = Vec::new();
        let mut owners = Vec::new();
        if let Some(url) = &self.telegram {
            sections.push(format!("[channels.telegram]\ntoken = \"{TG_TOKEN}\"\napi_url = \"{url}\""));
            owners.push(format!("\"telegram:{TG_OWNER}\""));
        }
        sections.extend([
            format!(
                "[channels.slack]\nbot_token = \"{BOT_TOKEN}\"\nsigning_secret = \"{SLACK_SECRET}\"\n\
                 api_url = \"{}\"",
                self.slack
            ),
            format!("[channels.discord]\ntoken = \"{}\"\napi_url = \"{}\"", super::fake_discord::TOKEN, self.discord),
            format!(
                "[channels.whatsapp]\naccess_token = \"{TOKEN}\"\nphone_number_id = \"{PHONE_NUMBER_ID}\"\n\
                 app_secret = \"{APP_SECRET}\"\nverify_token = \"{VERIFY_TOKEN}\"\napi_url = \"{}\"",
                self.whatsapp
            ),
            format!("[channels.signal]\nurl = \"{}\"\naccount = \"{ACCOUNT}\"", self.signal),
            format!(
                "[channels.email]\naddress = \"{MAIL_BUTLER}\"\n\
                 allowed = [{{ address = \"{MAIL_OWNER}\", proof = \"none\" }}]\n\
                 imap = {{ host = \"127.0.0.1\", port = {imap_port}, tls = \"none\", user = \"{MAIL_BUTLER}\", \
                 password = \"{MAIL_PASSWORD}\" }}\nsmtp = {{ host = \"127.0.0.1\", port = {smtp_port}, tls = \"none\" }}"
            ),
        ]);
        owners.extend([
            format!("\"slack:{SLACK_OWNER}\""),
            format!("\"discord:{DISCORD_OWNER}\""),
            format!("\"whatsapp:{WA_OWNER}\""),
            format!("\"signal:{SIGNAL_OWNER}\""),
            format!("\"email:{MAIL_OWNER}\""),
        ]);
        sections.push(format!("[access]\nowners = [{}]", owners.join(", ")));
        sections.join("\n\n")
    }
}

/// One platform's fake (email: the mailbox Butler reads and the sink it sends to).
pub enum Fake {
    Telegram(FakeTelegram),
    Slack(FakeSlack),
    Discord(FakeDiscord),
    WhatsApp(FakeWhatsApp),
    Signal(FakeSignal),
    Email(Dovecot, SmtpSink),
}

/// A message Butler showed the person.
#[derive(Clone, Debug)]
pub struct Said {
    /// What they read (its current text where the platform edits messages).
    pub text: String,
    /// The approval request it carries, still open to an answer.
    pub request: Option<Request>,
}

/// What answering an approval request needs, per platform.
#[derive(Clone, Debug)]
pub enum Request {
    Telegram { message: Value, data: String },
    Slack { channel: String, ts: String, thread: Option<String>, value: String },
    Discord { msg: Box<Msg>, custom_id: String },
    WhatsApp { id: String, action: String, title: String },
    Signal { timestamp: i64 },
    Email { message_id: String, references: String, subject: String },
}

/// The "approve once" button among `(label, value)` buttons.
fn once(buttons: impl IntoIterator<Item = (String, String)>) -> Option<(String, String)> {
    buttons.into_iter().find(|(_, v)| v.starts_with("ap:") && v.ends_with(":once"))
}

impl Fake {
    pub fn name(&self) -> &'static str {
        match self {
            Fake::Telegram(_) => "telegram",
            Fake::Slack(_) => "slack",
            Fake::Discord(_) => "discord",
            Fake::WhatsApp(_) => "whatsapp",
            Fake::Signal(_) => "signal",
            Fake::Email(..) => "email",
        }
    }

    /// Whether Butler's side of the platform is up: Telegram polled, Discord's gateway session
    /// live, Signal's event stream open (the others need no connection of Butler's to take a
    /// message).
    pub fn live(&self) -> bool {
        match self {
            Fake::Telegram(f) => !f.calls("getUpdates").is_empty(),
            Fake::Discord(f) => f.lock().gw.live.is_some(),
            Fake::Signal(f) => f.streams_open() > 0,
            _ => true,
        }
    }

    /// The owner says `text` to Butler in their direct conversation; `n` is unique in the run.
    pub async fn say(&self, base: &str, n: usize, text: &str) {
        match self {
            Fake::Telegram(f) => {
                f.push(dm(TG_OWNER, n as i64, text));
            }
            Fake::Slack(_) => {
                let event = slack::message(SLACK_OWNER, SLACK_DM, "im", text, &slack::ts(), None);
                let answer =
                    Sender::new(base, SLACK_SECRET).event(&slack::callback(&slack::event_id(), event), None).await;
                assert_eq!(answer.status, 200, "slack took {text:?}: {}", answer.body);
            }
            Fake::Discord(f) => {
                f.post(UserMessage::new(&f.snowflake(), DISCORD_DM, &discord_user(DISCORD_OWNER, "owner"), text));
            }
            Fake::WhatsApp(f) => {
                let status = f.deliver(base, &wa_text(WA_OWNER, &format!("wamid.say-{n}"), text)).await;
                assert_eq!(status, 200, "whatsapp took {text:?}");
            }
            Fake::Signal(f) => f.push(direct(SIGNAL_OWNER, &uuid_for(SIGNAL_OWNER), signal_ts(n), text)),
            // Straight into the mailbox, as the receiving server delivers it.
            Fake::Email(imap, _) => {
                let mail = format!(
                    "From: <{MAIL_OWNER}>\r\nTo: {MAIL_BUTLER}\r\nSubject: {text}\r\n\
                     Message-ID: <say-{n}@example.com>\r\n\r\n{text}\r\n"
                );
                imap.deliver(MAIL_BUTLER, MAIL_PASSWORD, mail.as_bytes()).await;
            }
        }
    }

    /// How many messages Butler has shown the owner so far.
    pub fn said_count(&self) -> usize {
        match self {
            Fake::Telegram(f) => f.chat(TG_OWNER).len(),
            Fake::Slack(f) => f.messages(SLACK_DM).len(),
            Fake::Discord(f) => f.bot_messages(DISCORD_DM).len(),
            Fake::WhatsApp(f) => f.sent_to(WA_OWNER).len(),
            Fake::Signal(f) => f.sent().iter().filter(|m| m.to == SIGNAL_OWNER).count(),
            Fake::Email(_, smtp) => smtp.mails().len(),
        }
    }

    /// What Butler has shown the owner, oldest first, from the `from`th message on.
    pub fn said(&self, from: usize) -> Vec<Said> {
        match self {
            Fake::Telegram(f) => f
                .chat(TG_OWNER)
                .into_iter()
                .skip(from)
                .map(|m| {
                    let request = once(m.buttons)
                        .map(|(_, data)| Request::Telegram { message: f.message_json(TG_OWNER, m.id), data });
                    Said { text: m.text, request }
                })
                .collect(),
            Fake::Slack(f) => f
                .messages(SLACK_DM)
                .into_iter()
                .skip(from)
                .map(|m| {
                    let request = once(m.buttons.clone()).map(|(_, value)| Request::Slack {
                        channel: m.channel.clone(),
                        ts: m.ts.clone(),
                        thread: m.thread_ts.clone(),
                        value,
                    });
                    Said { text: m.shown(), request }
                })
                .collect(),
            Fake::Discord(f) => f
                .bot_messages(DISCORD_DM)
                .into_iter()
                .skip(from)
                .map(|m| {
                    let ids = m.buttons().into_iter().map(|id| (String::new(), id));
                    let request =
                        once(ids).map(|(_, custom_id)| Request::Discord { msg: Box::new(m.clone()), custom_id });
                    Said { text: m.content, request }
                })
                .collect(),
            Fake::WhatsApp(f) => f
                .sent_to(WA_OWNER)
                .into_iter()
                .skip(from)
                .map(|m| {
                    let request =
                        once(m.buttons()).map(|(title, action)| Request::WhatsApp { id: m.id.clone(), action, title });
                    Said { text: m.text(), request }
                })
                .collect(),
            Fake::Signal(f) => f
                .sent()
                .into_iter()
                .filter(|m| m.to == SIGNAL_OWNER)
                .skip(from)
                .map(|m| {
                    let request =
                        m.text.contains("Approval needed").then_some(Request::Signal { timestamp: m.timestamp });
                    Said { text: m.text, request }
                })
                .collect(),
            Fake::Email(_, smtp) => smtp
                .mails()
                .into_iter()
                .skip(from)
                .map(|m| {
                    let text = m.text().trim().to_string();
                    let request = text.contains("Approval needed").then(|| Request::Email {
                        message_id: m.header("Message-ID").unwrap_or_default(),
                        references: m.header("References").unwrap_or_default(),
                        subject: m.header("Subject").unwrap_or_default(),
                    });
                    Said { text, request }
                })
                .collect(),
        }
    }

    /// The owner answers `request` (shown here) with "approve once"; `n` is unique in the run.
    /// False when the platform's side refused the answer.
    pub async fn approve(&self, base: &str, n: usize, request: &Request) -> bool {
        match (self, request) {
            (Fake::Telegram(f), Request::Telegram { message, data }) => {
                f.push(callback(&format!("q-{n}"), telegram_user(TG_OWNER, "Owner"), message, data));
                true
            }
            (Fake::Slack(_), Request::Slack { channel, ts, thread, value }) => {
                let click = slack::click(SLACK_OWNER, "owner", channel, ts, thread.as_deref(), value);
                Sender::new(base, SLACK_SECRET).click(&click).await.status == 200
            }
            (Fake::Discord(f), Request::Discord { msg, custom_id }) => {
                f.click(&discord_user(DISCORD_OWNER, "owner"), msg, custom_id);
                true
            }
            (Fake::WhatsApp(f), Request::WhatsApp { id, action, title }) => {
                let reply = button_reply(WA_OWNER, &format!("wamid.say-{n}"), id, action, title);
                f.deliver(base, &reply).await == 200
            }
            (Fake::Signal(f), Request::Signal { timestamp }) => {
                let uuid = uuid_for(SIGNAL_OWNER);
                f.push(reaction(SIGNAL_OWNER, &uuid, signal_ts(n), "👍", ACCOUNT, *timestamp, false, None));
                true
            }
            (Fake::Email(imap, _), Request::Email { message_id, references, subject }) => {
                let mail = format!(
                    "From: <{MAIL_OWNER}>\r\nTo: {MAIL_BUTLER}\r\nSubject: Re: {subject}\r\n\
                     Message-ID: <say-{n}@example.com>\r\nIn-Reply-To: {message_id}\r\n\
                     References: {references} {message_id}\r\n\r\nAPPROVE\r\n"
                );
                imap.deliver(MAIL_BUTLER, MAIL_PASSWORD, mail.as_bytes()).await;
                true
            }
            _ => false,
        }
    }
}
