//! An SMTP sink for the email tests: a small server on 127.0.0.1 that speaks enough of SMTP
//! (RFC 5321: EHLO, AUTH PLAIN and XOAUTH2, MAIL, RCPT, DATA with dot-unstuffing, RSET, NOOP, QUIT) for a
//! real client (lettre) and records every mail it accepts, instead of relaying it.
//!
//! It must never relay or resolve anything: it stands in for the outgoing server.

use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// One accepted mail.
#[derive(Clone, Debug)]
pub struct SentMail {
    pub from: String,
    pub to: Vec<String>,
    /// The message as sent (headers and body, CRLF line ends).
    pub data: String,
}

impl SentMail {
    /// The plain text part, decoded (quoted-printable or base64 undone).
    pub fn text(&self) -> String {
        let msg = mail_parser::MessageParser::default().parse(self.data.as_bytes());
        msg.and_then(|m| m.body_text(0).map(|t| t.to_string())).unwrap_or_default()
    }

    /// A header's value (unfolded), if present.
    pub fn header(&self, name: &str) -> Option<String> {
        let head = self.data.split("\r\n\r\n").next().unwrap_or_default();
        let mut value: Option<String> = None;
        for line in head.split("\r\n") {
            if line.starts_with([' ', '\t']) {
                if let Some(v) = value.as_mut() {
                    v.push(' ');
                    v.push_str(line.trim());
                }
                continue;
            }
            if value.is_some() {
                break;
            }
            if let Some((n, v)) = line.split_once(':') {
                if n.eq_ignore_ascii_case(name) {
                    value = Some(v.trim().to_string());
                }
            }
        }
        value
    }
}

#[derive(Default)]
struct State {
    mails: Vec<SentMail>,
    /// The login the sink accepts (`AUTH PLAIN`), if it asks for one.
    login: Option<(String, String)>,
}

pub struct SmtpSink {
    pub port: u16,
    state: Arc<Mutex<State>>,
}

impl SmtpSink {
    /// A sink that takes mail without a login.
    pub async fn start() -> Self {
        Self::start_with(None).await
    }

    /// A sink that requires `login` ((user, password)) when given.
    pub async fn start_with(login: Option<(&str, &str)>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State { mails: Vec::new(), login: login.map(|(u, p)| (u.into(), p.into())) }));
        let shared = state.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                tokio::spawn(session(tcp, shared.clone()));
            }
        });
        Self { port, state }
    }

    pub fn mails(&self) -> Vec<SentMail> {
        self.state.lock().unwrap().mails.clone()
    }

    /// Waits until `done` holds for the mails so far (at most `secs`).
    pub async fn wait(&self, secs: u64, what: &str, done: impl Fn(&[SentMail]) -> bool) -> Vec<SentMail> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let mails = self.mails();
            if done(&mails) {
                return mails;
            }
            assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}; mails: {mails:#?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn plain_login(b64: &str) -> Option<(String, String)> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64.trim()).ok()?;
    let mut parts = bytes.split(|b| *b == 0).map(|p| String::from_utf8_lossy(p).to_string());
    let _authzid = parts.next()?;
    Some((parts.next()?, parts.next()?))
}

/// (user, token) of an XOAUTH2 answer (`user=…^Aauth=Bearer …^A^A`).
fn xoauth2(b64: &str) -> Option<(String, String)> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64.trim()).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let mut user = None;
    let mut token = None;
    for field in text.split('\x01') {
        if let Some(u) = field.strip_prefix("user=") {
            user = Some(u.to_string());
        }
        if let Some(t) = field.strip_prefix("auth=Bearer ") {
            token = Some(t.to_string());
        }
    }
    Some((user?, token?))
}

async fn session(tcp: tokio::net::TcpStream, state: Arc<Mutex<State>>) {
    let (read, mut write) = tcp.into_split();
    let mut lines = BufReader::new(read).lines();
    let needs_login = state.lock().unwrap().login.clone();
    let mut authed = needs_login.is_none();
    let (mut from, mut to) = (String::new(), Vec::new());
    let _ = write.write_all(b"220 sink.test ESMTP\r\n").await;
    while let Ok(Some(line)) = lines.next_line().await {
        let upper = line.to_ascii_uppercase();
        let reply: String = if upper.starts_with("EHLO") || upper.starts_with("HELO") {
            "250-sink.test\r\n250-AUTH PLAIN XOAUTH2\r\n250 SIZE 50000000\r\n".into()
        } else if let Some(b64) = line.strip_prefix("AUTH XOAUTH2 ") {
            let ok = needs_login.as_ref().is_none_or(|want| xoauth2(b64).as_ref() == Some(want));
            authed |= ok;
            if ok { "235 2.7.0 Authentication successful\r\n" } else { "535 5.7.8 Authentication failed\r\n" }.into()
        } else if let Some(b64) = line.strip_prefix("AUTH PLAIN ") {
            let ok = needs_login.as_ref().is_none_or(|want| plain_login(b64).as_ref() == Some(want));
            authed |= ok;
            if ok { "235 2.7.0 Authentication successful\r\n" } else { "535 5.7.8 Authentication failed\r\n" }.into()
        } else if upper.starts_with("MAIL FROM:") {
            if !authed {
                "530 5.7.0 Authentication required\r\n".into()
            } else {
                from = line[10..].trim().trim_matches(['<', '>']).to_string();
                to.clear();
                "250 OK\r\n".into()
            }
        } else if upper.starts_with("RCPT TO:") {
            to.push(line[8..].trim().trim_matches(['<', '>']).to_string());
            "250 OK\r\n".into()
        } else if upper == "DATA" {
            let _ = write.write_all(b"354 End data with <CR><LF>.<CR><LF>\r\n").await;
            let mut data = String::new();
            while let Ok(Some(l)) = lines.next_line().await {
                if l == "." {
                    break;
                }
                data.push_str(l.strip_prefix('.').unwrap_or(&l));
                data.push_str("\r\n");
            }
            state.lock().unwrap().mails.push(SentMail { from: from.clone(), to: to.clone(), data });
            "250 OK queued\r\n".into()
        } else if upper == "QUIT" {
            let _ = write.write_all(b"221 Bye\r\n").await;
            return;
        } else if upper == "RSET" || upper == "NOOP" {
            "250 OK\r\n".into()
        } else {
            "502 Command not implemented\r\n".into()
        };
        if write.write_all(reply.as_bytes()).await.is_err() {
            return;
        }
    }
}
