//! Mail in: an IMAP session (plain on 127.0.0.1, or implicit TLS), the sync of the folder and
//! IDLE between syncs, reconnecting with backoff.
//!
//! The mailbox itself is the cursor: a mail is fetched with `BODY.PEEK[]` (it stays unread for
//! the person's own mail client), handed to the ingress, and only once the ingress has stored
//! it is it marked with the keyword [`HANDLED`]. A sync fetches every mail of the last
//! `since_days` days without that keyword, so what arrived while Butler was down is handled at
//! the next start, and a crash between the store and the mark only repeats a mail the inbox
//! already holds (its event id is its `Message-ID`): nothing twice, nothing missed. It must never
//! mark a mail handled before the ingress stored it, nor log a mail's text.

use crate::parse;
use crate::{EmailChannel, Server, Tls};
use async_imap::types::UnsolicitedResponse;
use async_imap::Session;
use butler_channel::{Accepted, Backoff, ChannelError, Ingress, IngressError};
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

/// The keyword a handled mail carries.
pub const HANDLED: &str = "$ButlerHandled";
/// How long one IDLE lasts before Butler syncs anyway (servers end it after 30 minutes).
const IDLE_FOR: Duration = Duration::from_secs(25 * 60);
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// A TCP or TLS connection to the IMAP server.
#[derive(Debug)]
pub(crate) enum Conn {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Conn {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => std::pin::Pin::new(s).poll_read(cx, buf),
            Conn::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s) => std::pin::Pin::new(s).poll_write(cx, buf),
            Conn::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => std::pin::Pin::new(s).poll_flush(cx),
            Conn::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => std::pin::Pin::new(s).poll_shutdown(cx),
            Conn::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

fn transient(what: &str, e: impl std::fmt::Display) -> ChannelError {
    ChannelError::Transient(format!("IMAP {what}: {e}"))
}

/// The XOAUTH2 answer (`user=…^Aauth=Bearer …^A^A`, base64 by the client library).
struct XOAuth2 {
    user: String,
    token: String,
}

impl async_imap::Authenticator for XOAuth2 {
    type Response = String;

    fn process(&mut self, _challenge: &[u8]) -> String {
        format!("user={}\x01auth=Bearer {}\x01\x01", self.user, self.token)
    }
}

/// A logged-in session on `server`.
pub(crate) async fn login(server: &Server) -> Result<Session<Conn>, ChannelError> {
    let tcp = tokio::time::timeout(Duration::from_secs(20), TcpStream::connect((server.host.as_str(), server.port)))
        .await
        .map_err(|_| transient("connect", "timed out"))?
        .map_err(|e| transient("connect", e.kind()))?;
    let conn = match server.tls {
        Tls::None => Conn::Plain(tcp),
        Tls::Implicit | Tls::StartTls => {
            let mut roots = rustls::RootCertStore::empty();
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            let config =
                rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                    .with_safe_default_protocol_versions()
                    .map_err(|e| transient("TLS", e))?
                    .with_root_certificates(roots)
                    .with_no_client_auth();
            let name = rustls::pki_types::ServerName::try_from(server.host.clone()).map_err(|e| transient("TLS", e))?;
            let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
                .connect(name, tcp)
                .await
                .map_err(|e| transient("TLS", e.kind()))?;
            Conn::Tls(Box::new(tls))
        }
    };
    let mut client = async_imap::Client::new(conn);
    // The server's greeting comes first.
    client.read_response().await.map_err(|e| transient("greeting", e))?;
    let refused = |e: async_imap::error::Error| match e {
        async_imap::error::Error::No(_) | async_imap::error::Error::Bad(_) => {
            ChannelError::Unauthorized("the IMAP server refused the login".into())
        }
        other => transient("login", other),
    };
    if let Some(token) = server.token().await? {
        let auth = XOAuth2 { user: server.user.clone(), token };
        return client.authenticate("XOAUTH2", auth).await.map_err(|(e, _)| refused(e));
    }
    let password = server.password.clone();
    client.login(&server.user, &password).await.map_err(|(e, _)| match e {
        async_imap::error::Error::No(_) | async_imap::error::Error::Bad(_) => {
            ChannelError::Unauthorized("the IMAP server refused the login".into())
        }
        other => transient("login", other),
    })
}

impl EmailChannel {
    pub(crate) async fn receive(
        &self,
        ingress: Arc<dyn Ingress>,
        cancel: CancellationToken,
    ) -> Result<(), ChannelError> {
        let mut backoff = Backoff::new(FIRST_BACKOFF, MAX_BACKOFF);
        backoff.repeat("email", &cancel, || async { self.session(&*ingress, &cancel).await.map(|()| true) }).await;
        Ok(())
    }

    /// One session: sync, then IDLE and sync again whenever the server says something changed.
    async fn session(&self, ingress: &dyn Ingress, cancel: &CancellationToken) -> Result<(), ChannelError> {
        let mut session = login(&self.settings.imap).await?;
        let mailbox = session.select(&self.settings.folder).await.map_err(|e| transient("select", e))?;
        let validity = mailbox.uid_validity.unwrap_or(0);
        tracing::info!(channel = "email", folder = %self.settings.folder, "reading mail");
        loop {
            self.sync(&mut session, validity, ingress).await?;
            // Mail that arrived while Butler synced is announced (`* N EXISTS`) in the answers to
            // the sync's own commands, or before the server's go-ahead for IDLE: those land in the
            // session's unsolicited responses, and IDLE would not hear of them again (a mail
            // waited for the next one, up to IDLE_FOR). Sync again instead.
            if announced(|| session.unsolicited_responses.try_recv().ok()) {
                continue;
            }
            let notes = session.unsolicited_responses.clone();
            let mut idle = session.idle();
            idle.init().await.map_err(|e| transient("IDLE", e))?;
            if announced(|| notes.try_recv().ok()) {
                session = idle.done().await.map_err(|e| transient("IDLE done", e))?;
                continue;
            }
            let (wait, stop) = idle.wait_with_timeout(IDLE_FOR);
            let woke = tokio::select! {
                _ = cancel.cancelled() => None,
                r = wait => Some(r),
            };
            drop(stop);
            session = idle.done().await.map_err(|e| transient("IDLE done", e))?;
            match woke {
                None => {
                    let _ = session.logout().await;
                    return Ok(());
                }
                Some(r) => {
                    r.map_err(|e| transient("IDLE", e))?;
                }
            }
        }
    }

    /// Fetches the folder's recent mail not yet handled, oldest first, and hands each over.
    async fn sync(
        &self,
        session: &mut Session<Conn>,
        validity: u32,
        ingress: &dyn Ingress,
    ) -> Result<(), ChannelError> {
        let since = since_date(self.settings.since_days);
        let uids = session
            .uid_search(format!("UNKEYWORD {HANDLED} SINCE {since}"))
            .await
            .map_err(|e| transient("search", e))?;
        let mut uids: Vec<u32> = uids.into_iter().collect();
        uids.sort_unstable();
        let rules = self.rules();
        for uid in uids {
            let raw = {
                let mut fetched =
                    session.uid_fetch(uid.to_string(), "BODY.PEEK[]").await.map_err(|e| transient("fetch", e))?;
                let mut body = None;
                while let Some(f) = fetched.next().await {
                    let f = f.map_err(|e| transient("fetch", e))?;
                    if let Some(b) = f.body() {
                        body = Some(b.to_vec());
                    }
                }
                body
            };
            if let Some(raw) = raw {
                match parse::mail(&raw, validity, uid, &rules) {
                    Ok(mail) => {
                        self.remember(&mail);
                        match ingress.accept(mail.event).await {
                            Ok(Accepted::New | Accepted::Duplicate) => {}
                            Err(IngressError::Invalid(why)) => {
                                tracing::warn!(channel = "email", uid, why, "mail refused")
                            }
                            Err(IngressError::Unavailable(why)) => {
                                // Not marked: the next sync offers it again.
                                return Err(ChannelError::Transient(format!("the inbox cannot store mail: {why}")));
                            }
                        }
                    }
                    Err(why) => tracing::info!(channel = "email", uid, why, "not a message for Butler"),
                }
            }
            let mut stored = session
                .uid_store(uid.to_string(), format!("+FLAGS ({HANDLED})"))
                .await
                .map_err(|e| transient("store", e))?;
            while stored.next().await.is_some() {}
        }
        Ok(())
    }
}

/// Drains the responses `next` gives; whether one said the folder has new mail.
fn announced(mut next: impl FnMut() -> Option<UnsolicitedResponse>) -> bool {
    let mut new_mail = false;
    while let Some(response) = next() {
        new_mail |= matches!(response, UnsolicitedResponse::Exists(_) | UnsolicitedResponse::Recent(_));
    }
    new_mail
}

/// `since_days` ago as IMAP's date (`5-Dec-2026`).
fn since_date(days: u32) -> String {
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let secs = butler_channel::now_ms() / 1000 - i64::from(days) * 86_400;
    // Civil date from days since the epoch (Howard Hinnant's algorithm).
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{d}-{}-{y}", MONTHS[(m - 1) as usize])
}

/// Used by `check`: logs in and says whether the server has IDLE.
pub(crate) async fn has_idle(server: &Server) -> Result<bool, ChannelError> {
    let mut session = login(server).await?;
    let caps = session.capabilities().await.map_err(|e| transient("capabilities", e))?;
    let idle = caps.has_str("IDLE");
    let _ = session.logout().await;
    Ok(idle)
}

/// Used by `send`: the subject of the mail with `Message-ID` `id` in `folder`, if found.
pub(crate) async fn subject_of(server: &Server, folder: &str, id: &str) -> Option<String> {
    let mut session = login(server).await.ok()?;
    session.examine(folder).await.ok()?;
    let quoted = id.replace(['"', '\\'], "");
    let uids = session.uid_search(format!("HEADER Message-ID \"{quoted}\"")).await.ok()?;
    let uid = uids.into_iter().min()?;
    let subject = {
        let mut fetched = session.uid_fetch(uid.to_string(), "BODY.PEEK[HEADER.FIELDS (SUBJECT)]").await.ok()?;
        let mut found = None;
        while let Some(Ok(f)) = fetched.next().await {
            if let Some(h) = f.header().or(f.body()) {
                let text = String::from_utf8_lossy(h);
                found = mail_parser::MessageParser::default()
                    .parse(text.as_bytes())
                    .and_then(|m| m.subject().map(str::to_string));
            }
        }
        found
    };
    let _ = session.logout().await;
    subject
}

#[cfg(test)]
mod tests {
    #[test]
    fn since_is_an_imap_date() {
        let d = super::since_date(0);
        let parts: Vec<&str> = d.split('-').collect();
        assert_eq!(parts.len(), 3, "{d}");
        assert!(parts[0].parse::<u32>().is_ok_and(|n| (1..=31).contains(&n)), "{d}");
        assert!(parts[2].parse::<u32>().is_ok_and(|y| y >= 2026), "{d}");
    }

    #[test]
    fn new_mail_announced_during_a_sync_is_noticed_and_every_response_drained() {
        use async_imap::types::UnsolicitedResponse as R;
        let table: Vec<(Vec<R>, bool)> = vec![
            (vec![], false),
            (vec![R::Expunge(3)], false),
            (vec![R::Exists(4)], true),
            (vec![R::Recent(1)], true),
            (vec![R::Expunge(2), R::Exists(5), R::Expunge(1)], true),
        ];
        for (responses, want) in table {
            let n = responses.len();
            let mut left = responses.into_iter();
            let mut taken = 0;
            let got = super::announced(|| left.next().inspect(|_| taken += 1));
            assert_eq!(got, want, "{n} responses");
            assert_eq!(taken, n, "all drained");
        }
    }
}
