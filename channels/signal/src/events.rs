//! The daemon's event stream (`GET {url}/api/v1/events?account=…`, Server-Sent Events:
//! `event:receive` + `data:{"envelope": …}`, keep-alive comments every 15 seconds), read until
//! Butler stops, reconnecting with backoff (0.5 s doubling to 30 s) when it ends or goes silent.
//!
//! Each item is handed to the ingress and only then marked read; while the ingress cannot make
//! it durable it is offered again (never dropped). It must never hold more than one frame's
//! bytes beyond [`MAX_FRAME`], nor log a message's text.

use crate::{normalize, SignalChannel};
use butler_channel::{accept_until_stored, Accepted, Backoff, ChannelError, InboundEvent, Ingress};
use futures_util::StreamExt;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The longest an event stream may stay silent (the daemon sends a comment every 15 s).
const SILENCE: Duration = Duration::from_secs(45);
/// The largest frame Butler reads; a longer one ends the connection.
pub const MAX_FRAME: usize = 4 * 1024 * 1024;
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// One frame's `event` name and joined `data` lines.
pub fn frame(raw: &str) -> Option<(String, String)> {
    let mut event = String::from("message");
    let mut data: Vec<&str> = Vec::new();
    for line in raw.lines() {
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => event = value.to_string(),
            "data" => data.push(value),
            _ => {}
        }
    }
    (!data.is_empty()).then(|| (event, data.join("\n")))
}

/// Where the first complete frame in `buf` ends (after its blank line), and the separator's size.
pub fn frame_end(buf: &[u8]) -> Option<(usize, usize)> {
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|p| (p, 2));
    let crlf = buf.windows(4).position(|w| w == b"\r\n\r\n").map(|p| (p, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

impl SignalChannel {
    pub(crate) async fn receive(
        &self,
        ingress: Arc<dyn Ingress>,
        cancel: CancellationToken,
    ) -> Result<(), ChannelError> {
        let mut backoff = Backoff::new(FIRST_BACKOFF, MAX_BACKOFF);
        backoff
            .repeat("signal", &cancel, || async {
                self.learn_uuid().await;
                self.stream_once(&*ingress, &cancel).await
            })
            .await;
        Ok(())
    }

    /// Mentions may name the bot by uuid only: learn it once from the daemon.
    async fn learn_uuid(&self) {
        if self.me().uuid.is_some() {
            return;
        }
        let account = self.settings.account.clone();
        if let Ok(status) = self.rpc.call("getUserStatus", json!({"recipient": [account]})).await {
            if let Some(uuid) = status[0]["uuid"].as_str().filter(|u| !u.is_empty()) {
                self.me.lock().unwrap_or_else(|e| e.into_inner()).uuid = Some(uuid.to_string());
            }
        }
    }

    /// One connection, read until it ends, goes silent or Butler stops. `Ok(true)` when it
    /// delivered at least one frame (the backoff starts again).
    async fn stream_once(&self, ingress: &dyn Ingress, cancel: &CancellationToken) -> Result<bool, ChannelError> {
        let url = format!("{}/api/v1/events", self.settings.url.trim_end_matches('/'));
        let req =
            self.stream.get(url).query(&[("account", &self.settings.account)]).header("accept", "text/event-stream");
        let resp = tokio::select! {
            _ = cancel.cancelled() => return Ok(false),
            r = req.send() => r.map_err(|e| crate::rpc::transport("events", &e))?,
        };
        match resp.status().as_u16() {
            200 => {}
            400 => return Err(ChannelError::Unauthorized("the daemon does not know the account".into())),
            s => return Err(ChannelError::Transient(format!("the event stream answered {s}"))),
        }
        tracing::info!(channel = "signal", "listening to signal-cli's event stream");
        let mut body = resp.bytes_stream();
        let mut buf: Vec<u8> = Vec::new();
        let mut delivered = false;
        loop {
            let chunk = tokio::select! {
                _ = cancel.cancelled() => return Ok(delivered),
                c = tokio::time::timeout(SILENCE, body.next()) => c,
            };
            match chunk {
                Err(_) => return Err(ChannelError::Transient("the event stream went silent".into())),
                Ok(None) => return Ok(delivered),
                Ok(Some(Err(e))) => return Err(crate::rpc::transport("events", &e)),
                Ok(Some(Ok(bytes))) => buf.extend_from_slice(&bytes),
            }
            while let Some((end, sep)) = frame_end(&buf) {
                let raw = String::from_utf8_lossy(&buf[..end]).into_owned();
                buf.drain(..end + sep);
                if let Some((event, data)) = frame(&raw) {
                    if event == "receive" || event == "message" {
                        self.handle(&data, ingress, cancel).await;
                        delivered = true;
                    }
                }
            }
            if buf.len() > MAX_FRAME {
                return Err(ChannelError::Rejected("an event larger than 4 MiB".into()));
            }
        }
    }

    /// Hands one item to the ingress (again and again while it cannot store it), then marks it
    /// read.
    async fn handle(&self, data: &str, ingress: &dyn Ingress, cancel: &CancellationToken) {
        let Ok(item) = serde_json::from_str::<Value>(data) else {
            tracing::warn!(channel = "signal", "an event that is not JSON; skipped");
            return;
        };
        let event = match normalize::event(&item, &self.me()) {
            Ok(event) => event,
            Err(why) => {
                tracing::debug!(channel = "signal", why, "not an event");
                return;
            }
        };
        if accept_until_stored("signal", ingress, &event, cancel).await == Some(Accepted::New) {
            self.mark_read(&event).await;
        }
    }

    /// A read receipt for a message (not for reactions); failures only logged.
    async fn mark_read(&self, event: &InboundEvent) {
        let (Some(id), true) = (&event.message_id, matches!(event.body, butler_channel::EventBody::Message { .. }))
        else {
            return;
        };
        let Some(ts) = id.split(':').next().and_then(|t| t.parse::<i64>().ok()) else { return };
        let params = json!({"recipient": [event.actor.identity.user_id], "targetTimestamp": [ts], "type": "read"});
        if let Err(e) = self.rpc.call("sendReceipt", params).await {
            tracing::debug!(channel = "signal", error = %e, "read receipt not sent");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_read_as_the_daemon_writes_them() {
        let cases: &[(&str, Option<(&str, &str)>)] = &[
            ("event:receive\ndata:{\"a\":1}", Some(("receive", "{\"a\":1}"))),
            ("event: receive\ndata: {\"a\":1}", Some(("receive", "{\"a\":1}"))),
            ("data:one\ndata:two", Some(("message", "one\ntwo"))),
            (":", None),
            ("event:receive", None),
        ];
        for (raw, want) in cases {
            let got = frame(raw);
            assert_eq!(got.as_ref().map(|(e, d)| (e.as_str(), d.as_str())), *want, "{raw}");
        }
        assert_eq!(frame_end(b":\n\nevent:x\n"), Some((1, 2)));
        assert_eq!(frame_end(b"data:x\r\n\r\n"), Some((6, 4)));
        assert_eq!(frame_end(b"data:x\n"), None);
    }
}
