//! A received mail as Butler's `InboundEvent`, or why it is none.
//!
//! - The sender is trusted only when the receiving server's `Authentication-Results` header
//!   (the topmost one, or the one whose authserv-id is configured: a sender can add their own
//!   lower down, never above the receiving server's) shows DKIM passing for the sender's domain
//!   (`header.d`) or SPF passing for it (`smtp.mailfrom`), as that sender's rule asks.
//! - People are `email:<address>` (lowercase). A conversation is a thread: the conversation
//!   `email:<address>/<root>`, where the root is the first `References` id (else `In-Reply-To`,
//!   else the mail's own `Message-ID`), so a reply continues its session and a new subject
//!   starts one.
//! - The text is the plain part (HTML turned into text when there is none), with quoted
//!   replies ("On … wrote:" and `>` lines) and the signature (after "-- ") cut off. A first
//!   line `APPROVE` or `DENY` in a reply to a request is that answer (`#yes` / `#no` on the
//!   replied-to message); a first line that is a number stays text, with `reply_to` set.
//! - Attachments are named `<uidvalidity>:<uid>:<n>` (the n-th attachment of that mail), which
//!   [`crate::EmailFiles`] fetches from the mailbox.
//!
//! Pure: it must never touch the network or the ingress.

use butler_channel::{
    Actor, ConversationKind, ConversationRef, EventBody, EventId, Identity, InboundEvent, ANSWER_NO, ANSWER_YES,
};
use butler_channel::{Attachment, MediaKind};
use mail_parser::{Address, HeaderValue, MessageParser, MimeHeaders};

/// The channel name in identities and conversations.
pub const CHANNEL: &str = "email";

/// What a sender must show to be trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proof {
    /// DKIM or SPF passing for the sender's domain.
    DkimOrSpf,
    Dkim,
    Spf,
    /// Nothing (a mailbox only trusted senders can reach; tests).
    None,
}

/// A sender Butler reads mail from: an address (`alice@example.com`) or a domain
/// (`@example.com`), and what it must show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sender {
    pub pattern: String,
    pub proof: Proof,
}

impl Sender {
    fn matches(&self, address: &str) -> bool {
        let p = self.pattern.to_ascii_lowercase();
        match p.strip_prefix('@') {
            Some(domain) => address.rsplit_once('@').is_some_and(|(_, d)| d == domain),
            None => p == address,
        }
    }
}

/// What the adapter needs to read a mail.
#[derive(Clone, Debug, Default)]
pub struct Rules {
    /// Butler's own address (its own mail is never an event).
    pub address: String,
    pub senders: Vec<Sender>,
    /// The receiving server's authserv-id; `None`: the topmost header.
    pub authserv_id: Option<String>,
}

/// A mail as the adapter keeps it beside the event.
#[derive(Debug)]
pub struct Mail {
    pub event: InboundEvent,
    pub subject: String,
}

fn bare(id: &str) -> String {
    id.trim().trim_start_matches('<').trim_end_matches('>').to_string()
}

fn first_id(v: &HeaderValue) -> Option<String> {
    match v {
        HeaderValue::Text(t) => Some(bare(t)),
        HeaderValue::TextList(l) => l.first().map(|t| bare(t)),
        _ => None,
    }
}

/// The sender's address (lowercase) and name. An address that would not read back as itself
/// from the conversation it names (`email:<address>/<root>`: a `/`, a space, a control
/// character) is no sender (found by fuzzing, fuzz/regressions/email_mime/).
fn address_of(a: Option<&Address>) -> Option<(String, Option<String>)> {
    let addr = a?.first()?;
    let email = addr.address()?.trim().to_ascii_lowercase();
    let usable = !email.is_empty() && !email.chars().any(|c| c == '/' || c.is_whitespace() || c.is_control());
    usable.then(|| (email, addr.name().map(str::to_string)))
}

/// Whether the mail's `Authentication-Results` show `proof` for `domain`.
pub fn proven(raw_headers: &[&str], authserv_id: Option<&str>, domain: &str, proof: Proof) -> bool {
    if proof == Proof::None {
        return true;
    }
    let header = match authserv_id {
        Some(id) => raw_headers.iter().find(|h| h.trim_start().split(';').next().is_some_and(|s| s.trim() == id)),
        None => raw_headers.first(),
    };
    let Some(header) = header else { return false };
    let mut dkim = false;
    let mut spf = false;
    for clause in header.split(';').skip(1) {
        let words: Vec<&str> = clause.split_whitespace().collect();
        let Some(result) = words.first() else { continue };
        let prop = |name: &str| words.iter().find_map(|w| w.strip_prefix(name)).map(|v| v.trim_matches('"'));
        let ours =
            |v: Option<&str>| v.map(|v| v.rsplit('@').next().unwrap_or(v).to_ascii_lowercase()) == Some(domain.into());
        match *result {
            "dkim=pass" => dkim |= ours(prop("header.d=")) || ours(prop("header.i=")),
            "spf=pass" => spf |= ours(prop("smtp.mailfrom=")),
            _ => {}
        }
    }
    match proof {
        Proof::Dkim => dkim,
        Proof::Spf => spf,
        _ => dkim || spf,
    }
}

/// The plain text of a reply with quotes and the signature cut off.
pub fn clean(text: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for line in text.lines() {
        let t = line.trim_end();
        if t == "--" || t == "-- " || line == "-- " {
            break;
        }
        if t.starts_with('>') {
            continue;
        }
        // "On Tue, 3 Dec 2026 at 10:00, Alice <a@x> wrote:" starts the quoted mail.
        if t.starts_with("On ") && t.ends_with("wrote:") {
            break;
        }
        out.push(t);
    }
    out.join("\n").trim().to_string()
}

/// The mail `raw` (with IMAP `uid` in a mailbox of `uidvalidity`) as an event, or why none.
pub fn mail(raw: &[u8], uidvalidity: u32, uid: u32, rules: &Rules) -> Result<Mail, String> {
    let msg = MessageParser::default().parse(raw).ok_or("not a mail")?;
    let (from, name) = address_of(msg.from()).ok_or("no sender")?;
    if from == rules.address.to_ascii_lowercase() {
        return Err("Butler's own mail".into());
    }
    let sender =
        rules.senders.iter().find(|s| s.matches(&from)).ok_or_else(|| format!("{from} is not an allowed sender"))?;
    let domain = from.rsplit_once('@').map(|(_, d)| d.to_string()).unwrap_or_default();
    let results: Vec<&str> = msg.header_values("Authentication-Results").filter_map(|v| v.as_text()).collect();
    if !proven(&results, rules.authserv_id.as_deref(), &domain, sender.proof) {
        return Err(format!("{from}: the receiving server shows no {:?} pass for {domain}", sender.proof));
    }
    // An empty id (`<>`) is none: as a thread it would name no conversation that reads back.
    let some = |id: Option<String>| id.filter(|id| !id.is_empty());
    let own = some(msg.message_id().map(bare));
    let in_reply_to = some(first_id(msg.in_reply_to()));
    let root = some(first_id(msg.references())).or_else(|| in_reply_to.clone()).or_else(|| own.clone());
    let text = match msg.body_text(0) {
        Some(t) => t.to_string(),
        None => msg.body_html(0).map(|h| mail_parser::decoders::html::html_to_text(&h)).unwrap_or_default(),
    };
    let text = clean(&text);
    let first = text.lines().next().unwrap_or_default().trim().to_ascii_uppercase();
    let answer = match (first.split_whitespace().next(), &in_reply_to) {
        (Some("APPROVE"), Some(_)) => Some(ANSWER_YES),
        (Some("DENY"), Some(_)) => Some(ANSWER_NO),
        _ => None,
    };
    let mut files = Vec::new();
    for (n, part) in msg.attachments().enumerate() {
        let mime = part.content_type().map(|c| match c.subtype() {
            Some(sub) => format!("{}/{sub}", c.ctype()),
            None => c.ctype().to_string(),
        });
        let kind = match mime.as_deref().unwrap_or_default() {
            m if m.starts_with("image/") => MediaKind::Image,
            m if m.starts_with("audio/") => MediaKind::Audio,
            m if m.starts_with("video/") => MediaKind::Video,
            _ => MediaKind::Document,
        };
        let mut file = Attachment::new(kind, format!("{uidvalidity}:{uid}:{n}"));
        file.mime = mime;
        file.name = part.attachment_name().map(str::to_string);
        file.size = Some(part.len() as u64);
        files.push(file);
    }
    if text.is_empty() && answer.is_none() && files.is_empty() {
        return Err("no text".into());
    }
    let body = match answer {
        Some(a) => EventBody::Action { action: a.to_string(), message: in_reply_to.clone(), interaction: None },
        None => EventBody::Message { text },
    };
    let id = match &own {
        Some(m) => format!("{CHANNEL}:msg:{m}"),
        None => format!("{CHANNEL}:uid:{uidvalidity}:{uid}"),
    };
    let at_ms = msg.date().map(|d| d.to_timestamp() * 1000).unwrap_or_else(butler_channel::now_ms);
    let event = InboundEvent {
        id: EventId(id),
        actor: Actor { identity: Identity::new(CHANNEL, from.clone()), display_name: name, is_bot: false },
        conversation: ConversationRef::new(CHANNEL, from).with_thread(root),
        kind: ConversationKind::Direct,
        addressed: true,
        reply_to: in_reply_to,
        message_id: own,
        body,
        at_ms,
        attachments: files,
    };
    Ok(Mail { event, subject: msg.subject().unwrap_or_default().to_string() })
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
