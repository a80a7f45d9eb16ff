//! Mail out through SMTP (lettre): the answer as a reply in its thread (`In-Reply-To` the
//! person's newest mail in it, `References` the root and that mail, `Re:` and the thread's subject), plain text (the Markdown as written) plus HTML
//! rendered from it, a file as an attachment, and a `Message-ID` derived from the outbox key, so
//! a retry after a crash is the same mail (receiving servers and clients keep one).
//!
//! Requests (messages with buttons) list their choices and how to answer by replying, and with
//! answer links a web link per choice. It must
//! never log a mail's text or the SMTP password.

use crate::{EmailChannel, Tls};
use butler_channel::{Button, ButtonStyle, ChannelError, Outbound};
use lettre::message::header::ContentType;
use lettre::message::{Attachment, Mailbox, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::{Credentials, Mechanism};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use sha2::{Digest, Sha256};
use std::time::Duration;

/// The `Message-ID` (without `<>`) of the mail for outbox key `key` from `address`.
pub fn message_id(key: &str, address: &str) -> String {
    let domain = address.rsplit_once('@').map_or("butler.invalid", |(_, d)| d);
    let digest = hex::encode(Sha256::digest(key.as_bytes()));
    format!("butler.{}@{domain}", &digest[..32])
}

/// How to answer a request by mail, in the buttons' order.
pub fn choices(buttons: &[Button]) -> String {
    let numbered: Vec<String> = buttons.iter().enumerate().map(|(n, b)| format!("{} {}", n + 1, b.label)).collect();
    let words = buttons.iter().any(|b| b.style == ButtonStyle::Primary)
        && buttons.iter().any(|b| b.style == ButtonStyle::Danger);
    let head =
        if words { "Reply with APPROVE or DENY as the first line, or with a number" } else { "Reply with a number" };
    format!("{head}: {}.", numbered.join(" · "))
}

/// The web link answering each choice (`label: <url>`, one per line), under a heading; empty
/// when no link could be made.
pub fn link_lines(buttons: &[Button], link: impl Fn(&Button) -> Option<String>) -> String {
    let lines: Vec<String> =
        buttons.iter().filter_map(|b| link(b).map(|url| format!("- {}: <{url}>", b.label))).collect();
    if lines.is_empty() {
        return String::new();
    }
    format!("Or open a link (each works once, and only for you):\n\n{}", lines.join("\n"))
}

/// The subject of an answer in a thread whose subject is `original`.
pub fn reply_subject(original: &str) -> String {
    let s = original.trim();
    if s.len() >= 3 && s[..3].eq_ignore_ascii_case("re:") {
        s.to_string()
    } else {
        format!("Re: {s}")
    }
}

/// A subject for a mail that starts no thread (a briefing): its first line, without Markdown.
fn first_line_subject(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("A message from Butler");
    let plain: String = line.chars().filter(|c| !matches!(c, '*' | '_' | '`' | '#' | '~')).collect();
    let plain = plain.trim();
    if plain.chars().count() > 78 {
        format!("{}…", plain.chars().take(77).collect::<String>())
    } else {
        plain.to_string()
    }
}

fn smtp_error(e: lettre::transport::smtp::Error) -> ChannelError {
    let text = e.to_string();
    if text.contains("535") || text.to_ascii_lowercase().contains("authentication") {
        ChannelError::Unauthorized("the SMTP server refused the login".into())
    } else if e.is_permanent() {
        ChannelError::Rejected(format!("the SMTP server refused the mail: {text}"))
    } else {
        ChannelError::Transient(format!("SMTP: {text}"))
    }
}

/// The SMTP transport for the configured server (with `token`, an XOAUTH2 login).
pub(crate) fn transport(
    s: &crate::Server,
    token: Option<String>,
) -> Result<AsyncSmtpTransport<Tokio1Executor>, String> {
    let builder = match s.tls {
        Tls::None => AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&s.host),
        Tls::Implicit => AsyncSmtpTransport::<Tokio1Executor>::relay(&s.host).map_err(|e| e.to_string())?,
        Tls::StartTls => AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&s.host).map_err(|e| e.to_string())?,
    };
    let mut builder = builder.port(s.port).timeout(Some(Duration::from_secs(30)));
    match token {
        Some(token) => {
            builder =
                builder.credentials(Credentials::new(s.user.clone(), token)).authentication(vec![Mechanism::Xoauth2])
        }
        None if !s.user.is_empty() => {
            builder = builder.credentials(Credentials::new(s.user.clone(), s.password.clone()))
        }
        None => {}
    }
    Ok(builder.build())
}

impl EmailChannel {
    /// Sends `msg` as one mail; its `Message-ID` (without `<>`).
    pub(crate) async fn send_mail(&self, msg: &Outbound) -> Result<String, ChannelError> {
        if msg.private_to.is_some() && msg.text.trim().is_empty() {
            return Ok(String::new());
        }
        let address = &self.settings.address;
        let to: Mailbox = msg
            .conversation
            .id
            .parse()
            .map_err(|_| ChannelError::Rejected(format!("`{}` is not a mail address", msg.conversation.id)))?;
        let from: Mailbox =
            format!("Butler <{address}>").parse().map_err(|_| ChannelError::Rejected("bad address".into()))?;
        let key = msg.key.clone().unwrap_or_else(|| format!("{}:{}", msg.conversation, butler_channel::now_ms()));
        let id = message_id(&key, address);
        let root = msg.conversation.thread.clone();
        let seen = root.as_deref().and_then(|r| self.thread(r));
        let subject = match (&root, &seen) {
            (_, Some(t)) => reply_subject(&t.subject),
            (Some(root), None) => reply_subject(&self.subject(root).await.unwrap_or_else(|| "your message".into())),
            (None, None) => match msg.title.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
                Some(title) => title.chars().filter(|c| !c.is_control()).collect(),
                None => first_line_subject(&msg.text),
            },
        };
        let mut text = msg.text.trim_end().to_string();
        if !msg.buttons.is_empty() {
            text = format!("{text}\n\n{}", choices(&msg.buttons));
            if let Some(links) = self.links.get() {
                let lines = link_lines(&msg.buttons, |b| links.link(&msg.conversation, &msg.conversation.id, b));
                if !lines.is_empty() {
                    text = format!("{text}\n\n{lines}");
                }
            }
        }
        let mut builder = Message::builder().from(from).to(to).subject(subject).message_id(Some(format!("<{id}>")));
        // The mail answered: the one quoted, else the person's newest in the thread, else its root.
        let parent = msg.reply_to.clone().or_else(|| seen.and_then(|t| t.newest)).or_else(|| root.clone());
        if let Some(parent) = &parent {
            builder = builder.in_reply_to(format!("<{parent}>"));
            let mut refs = root.iter().map(|r| format!("<{r}>")).collect::<Vec<_>>();
            if root.as_deref() != Some(parent.as_str()) {
                refs.push(format!("<{parent}>"));
            }
            builder = builder.references(refs.join(" "));
        }
        let alternative =
            MultiPart::alternative().singlepart(SinglePart::plain(text.clone())).singlepart(SinglePart::html(format!(
                "<!DOCTYPE html><html><body>{}</body></html>",
                butler_channel::markdown_html(&text)
            )));
        let body = match &msg.file {
            None => MultiPart::mixed().multipart(alternative),
            Some(file) => {
                let bytes = tokio::fs::read(&file.path)
                    .await
                    .map_err(|e| ChannelError::Rejected(format!("the file to send cannot be read: {}", e.kind())))?;
                let kind = ContentType::parse(&file.mime).unwrap_or(ContentType::TEXT_PLAIN);
                MultiPart::mixed()
                    .multipart(alternative)
                    .singlepart(Attachment::new(file.name.clone()).body(bytes, kind))
            }
        };
        let mail =
            builder.multipart(body).map_err(|e| ChannelError::Rejected(format!("the mail cannot be built: {e}")))?;
        match &self.smtp {
            Some(smtp) => smtp.send(mail).await.map_err(smtp_error)?,
            None => {
                let token = self.settings.smtp.token().await?;
                let smtp = transport(&self.settings.smtp, token).map_err(ChannelError::Transient)?;
                smtp.send(mail).await.map_err(smtp_error)?
            }
        };
        Ok(id)
    }

    /// The subject of thread `root` from the mailbox (intake did not see it: another replica
    /// read it, or Butler restarted).
    async fn subject(&self, root: &str) -> Option<String> {
        crate::imap::subject_of(&self.settings.imap, &self.settings.folder, root).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_subjects_and_choices() {
        let a = message_id("reply:email:msg:x#0", "butler@example.test");
        assert_eq!(a, message_id("reply:email:msg:x#0", "butler@example.test"), "the same key is the same mail");
        assert_ne!(a, message_id("reply:email:msg:y#0", "butler@example.test"));
        assert!(a.ends_with("@example.test") && a.starts_with("butler."), "{a}");
        let cases = [("Lunch?", "Re: Lunch?"), ("RE: Lunch?", "RE: Lunch?"), ("  re: x ", "re: x")];
        for (s, want) in cases {
            assert_eq!(reply_subject(s), want);
        }
        assert_eq!(first_line_subject("\n**Morning** briefing\nmore"), "Morning briefing");
        let b = [
            Button::new("Approve once", "ap:a:once", ButtonStyle::Primary),
            Button::new("Deny", "ap:a:deny", ButtonStyle::Danger),
        ];
        assert_eq!(
            choices(&b),
            "Reply with APPROVE or DENY as the first line, or with a number: 1 Approve once · 2 Deny."
        );
    }

    #[test]
    fn a_link_per_choice_that_has_one() {
        let b = [
            Button::new("Approve once", "ap:a:once", ButtonStyle::Primary),
            Button::new("Deny", "ap:a:deny", ButtonStyle::Danger),
        ];
        type Link = fn(&Button) -> Option<String>;
        let cases: [(Link, &str); 3] = [
            (|_| None, ""),
            (
                |b| Some(format!("https://b.example/approve/{}", b.action.replace(':', "."))),
                "Or open a link (each works once, and only for you):\n\n\
                 - Approve once: <https://b.example/approve/ap.a.once>\n- Deny: <https://b.example/approve/ap.a.deny>",
            ),
            (
                |b| b.action.ends_with("deny").then(|| "https://b.example/x".to_string()),
                "Or open a link (each works once, and only for you):\n\n- Deny: <https://b.example/x>",
            ),
        ];
        for (link, want) in cases {
            assert_eq!(link_lines(&b, link), want);
        }
    }
}
