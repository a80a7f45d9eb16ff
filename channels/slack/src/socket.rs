//! Socket Mode: instead of Slack POSTing to Butler, Butler opens a websocket
//! (apps.connections.open with the app-level token) and Slack sends envelopes over it:
//! `hello`, `disconnect` (open a new connection), `events_api`, `interactive` and
//! `slash_commands`, whose payloads are exactly what the HTTP endpoints receive. Each envelope
//! is acknowledged (`{"envelope_id"}`, plus the ephemeral reply for a slash command) only
//! after the ingress stored its event; an envelope that could not be stored is not
//! acknowledged, so Slack sends it again. Dropped connections (or one silent for 95 s despite
//! Butler's pings every 30 s) are reopened with backoff.
//!
//! The loop must stop promptly when cancelled and never hold more than [`IN_FLIGHT`]
//! envelopes at once.

use crate::interact::Command;
use crate::receive::{Refusal, Reply};
use crate::Shared;
use butler_channel::{ChannelError, Ingress};
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::Connector;
use tokio_util::sync::CancellationToken;

/// Envelopes handled at once per connection.
const IN_FLIGHT: usize = 32;
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Butler pings this often, and reconnects after this long without any frame from Slack.
const PING_EVERY: Duration = Duration::from_secs(30);
const SILENCE: Duration = Duration::from_secs(95);

#[derive(Deserialize)]
struct Envelope {
    #[serde(rename = "type")]
    kind: String,
    envelope_id: Option<String>,
    #[serde(default)]
    payload: Value,
    retry_attempt: Option<u32>,
}

/// Runs Socket Mode until `cancel` fires.
pub async fn run(shared: Arc<Shared>, ingress: Arc<dyn Ingress>, cancel: CancellationToken) {
    let mut backoff = Duration::from_secs(1);
    while !cancel.is_cancelled() {
        let wait = match connection(&shared, &ingress, &cancel).await {
            Ok(()) => {
                backoff = Duration::from_secs(1);
                continue;
            }
            Err(ChannelError::RateLimited { retry_after }) => retry_after,
            Err(e) => {
                tracing::warn!(error = %e, retry_in = ?backoff, "Slack Socket Mode connection lost");
                let wait = backoff;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                wait
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = cancel.cancelled() => {}
        }
    }
}

/// One websocket connection: Ok when Slack asked to reconnect or Butler is stopping.
async fn connection(
    shared: &Arc<Shared>,
    ingress: &Arc<dyn Ingress>,
    cancel: &CancellationToken,
) -> Result<(), ChannelError> {
    let open = async {
        let url = shared.api.open_socket().await?;
        let connector = Connector::Rustls(shared.api.tls());
        tokio_tungstenite::connect_async_tls_with_config(url.as_str(), None, false, Some(connector))
            .await
            .map_err(|e| ChannelError::Transient(format!("websocket: {e}")))
    };
    let ws = tokio::select! {
        ws = open => ws?.0,
        _ = cancel.cancelled() => return Ok(()),
    };
    tracing::info!("Slack Socket Mode connected");
    let (mut sink, mut stream) = ws.split();
    let (ack_tx, mut acks) = mpsc::channel::<String>(IN_FLIGHT);
    let mut tasks = JoinSet::new();
    let lost = |e: tokio_tungstenite::tungstenite::Error| ChannelError::Transient(format!("websocket: {e}"));
    let mut ping = tokio::time::interval(PING_EVERY);
    let mut last_seen = Instant::now();
    loop {
        tokio::select! {
            _ = ping.tick() => {
                if last_seen.elapsed() > SILENCE {
                    return Err(ChannelError::Transient("no traffic on the websocket; reconnecting".into()));
                }
                sink.send(Message::Ping(Vec::new().into())).await.map_err(lost)?;
            }
            _ = cancel.cancelled() => {
                let _ = sink.send(Message::Close(None)).await;
                return Ok(());
            }
            Some(ack) = acks.recv() => sink.send(Message::Text(ack.into())).await.map_err(lost)?,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            frame = stream.next(), if tasks.len() < IN_FLIGHT => match frame.inspect(|_| last_seen = Instant::now()) {
                None => return Err(ChannelError::Transient("websocket closed".into())),
                Some(Err(e)) => return Err(lost(e)),
                Some(Ok(Message::Ping(p))) => sink.send(Message::Pong(p)).await.map_err(lost)?,
                Some(Ok(Message::Close(_))) => return Err(ChannelError::Transient("closed by Slack".into())),
                Some(Ok(Message::Text(text))) => {
                    let env: Envelope = match serde_json::from_str(text.as_str()) {
                        Ok(env) => env,
                        Err(e) => {
                            tracing::warn!(error = %e, "unreadable Socket Mode frame");
                            continue;
                        }
                    };
                    match env.kind.as_str() {
                        "hello" => tracing::debug!("Socket Mode hello"),
                        "disconnect" => {
                            tracing::info!("Slack asked for a new Socket Mode connection");
                            let _ = sink.send(Message::Close(None)).await;
                            return Ok(());
                        }
                        _ => {
                            let (shared, ingress, tx) = (shared.clone(), ingress.clone(), ack_tx.clone());
                            tasks.spawn(async move {
                                if let Some(ack) = handle(&shared, &*ingress, env).await {
                                    let _ = tx.send(ack).await;
                                }
                            });
                        }
                    }
                }
                Some(Ok(_)) => {}
            },
        }
    }
}

/// The acknowledgement frame for one envelope, or None to leave it unacknowledged.
async fn handle(shared: &Shared, ingress: &dyn Ingress, env: Envelope) -> Option<String> {
    let id = env.envelope_id?;
    if let Some(n) = env.retry_attempt.filter(|n| *n > 0) {
        tracing::debug!(retry = n, "Slack redelivery over Socket Mode");
    }
    let payload = env.payload.to_string();
    let result = match env.kind.as_str() {
        "events_api" => shared.on_events(ingress, payload.as_bytes()).await,
        "interactive" => shared.on_interaction(ingress, payload.as_bytes()).await,
        "slash_commands" => match serde_json::from_value::<Command>(env.payload) {
            Ok(c) => shared.on_command(ingress, c).await,
            Err(e) => Err(Refusal::Bad(format!("not a slash command: {e}"))),
        },
        other => {
            tracing::debug!(kind = other, "Socket Mode envelope ignored");
            Ok(Reply::Empty)
        }
    };
    let ack = match result {
        Ok(Reply::Json(p)) => json!({"envelope_id": id, "payload": p}),
        Ok(Reply::Empty) => json!({"envelope_id": id}),
        Err(Refusal::Bad(m)) => {
            tracing::warn!(error = %m, "malformed Socket Mode envelope acknowledged and dropped");
            json!({"envelope_id": id})
        }
        Err(Refusal::Unavailable) => return None,
    };
    Some(ack.to_string())
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    /// [`handle`] on a JSON envelope.
    pub async fn handle_envelope(shared: &Shared, ingress: &dyn Ingress, envelope: Value) -> Option<String> {
        handle(shared, ingress, serde_json::from_value(envelope).expect("an envelope")).await
    }
}
