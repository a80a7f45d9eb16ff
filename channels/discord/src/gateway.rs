//! The Discord gateway, driven here over tokio-tungstenite (serenity's own `Client` runs event
//! handlers as detached tasks after it has already counted the event as seen, and its `Shard`
//! cannot be read from outside the crate). The URL comes from `GET /api/v10/gateway`; then Hello,
//! Identify (with the intents Butler needs) or Resume, heartbeats with the last sequence number,
//! and the dispatches Butler reads.
//!
//! The one rule: a dispatch's sequence number counts as processed only after its event is
//! durable (`Ingress::accept` returned). Events are handled one at a time, in order; if the
//! inbox cannot take one, the socket is dropped and the session resumed from the last processed
//! number, so Discord replays it. On any drop Butler resumes (Discord replays what was missed);
//! if Discord refuses, it identifies afresh. This module must never acknowledge a click before
//! the click is durable, and never block on anything but the inbox and Discord.

use crate::inbound::{self, Interaction, APPLICATION_COMMAND, MESSAGE_COMPONENT, MODAL_SUBMIT, THREAD_TYPES};
use crate::rest::snowflake;
use crate::state::{lock, Me};
use crate::Inner;
use butler_channel::{ChannelError, InboundEvent, Ingress, IngressError};
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::{json, Value};
use serenity::builder::{CreateInteractionResponse, CreateInteractionResponseMessage};
use serenity::http::{LightMethod, Route};
use serenity::model::channel::Message;
use serenity::model::gateway::{Gateway, GatewayIntents};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::{sleep, sleep_until, timeout, Instant};
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message as Frame;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tokio_util::sync::CancellationToken;

type Socket = WebSocketStream<MaybeTlsStream<tokio::net::TcpStream>>;

/// The intents Butler identifies with: guilds (threads), guild messages, DMs, and the
/// privileged message content (enable it in the Developer Portal).
pub fn intents() -> GatewayIntents {
    GatewayIntents::GUILDS
        | GatewayIntents::GUILD_MESSAGES
        | GatewayIntents::DIRECT_MESSAGES
        | GatewayIntents::MESSAGE_CONTENT
}

/// Gateway close codes after which reconnecting cannot help.
const FATAL: [(u16, &str); 6] = [
    (4004, "Discord refused the bot token; set [channels.discord] token to the token from the Developer Portal"),
    (4010, "Discord says the shard is invalid"),
    (4011, "this bot is in too many guilds for one gateway connection (sharding required)"),
    (4012, "Discord no longer accepts gateway version 10"),
    (4013, "Discord refused the gateway intents"),
    (
        4014,
        "Discord refused a privileged intent: enable Message Content under Bot -> Privileged Gateway Intents in the Developer Portal",
    ),
];

#[derive(Deserialize)]
struct Envelope {
    op: u8,
    #[serde(default)]
    d: Value,
    s: Option<u64>,
    t: Option<String>,
}

#[derive(Deserialize)]
struct Ready {
    session_id: String,
    resume_gateway_url: String,
    user: ReadyUser,
}

#[derive(Deserialize)]
struct ReadyUser {
    id: String,
    username: String,
}

/// What survives from one connection to the next.
#[derive(Default)]
struct Conn {
    /// Session id and the URL to resume it at (from Ready).
    session: Option<(String, String)>,
    /// The last sequence number whose event is processed.
    seq: Option<u64>,
    /// Ready or Resumed arrived on this connection.
    healthy: bool,
}

/// How a connection ended.
enum End {
    Cancelled,
    /// Connect again; `resume` keeps the session, `wait` is the least pause first.
    Reconnect {
        resume: bool,
        wait: Duration,
    },
}

/// How long a connection must last to count as stable (see the backoff in [`run`]).
const STABLE: Duration = Duration::from_secs(10);

fn again() -> End {
    End::Reconnect { resume: true, wait: Duration::ZERO }
}

/// The inbox could not take an event: it is not processed.
struct NotDurable;

/// A fraction in [0, 1) that differs between calls (for heartbeat and Invalid Session jitter).
fn jitter() -> f64 {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    f64::from(nanos % 1000) / 1000.0
}

fn backoff(failures: u32) -> Duration {
    match failures {
        0 => Duration::ZERO,
        n => Duration::from_secs(1 << (n - 1).min(6)),
    }
}

/// Receives until `cancel` fires; `Err` only when Discord refuses Butler for good.
pub(crate) async fn run(inner: &Inner, ingress: &dyn Ingress, cancel: &CancellationToken) -> Result<(), ChannelError> {
    let mut conn = Conn::default();
    let mut failures = 0u32;
    loop {
        let started = Instant::now();
        let url = match &conn.session {
            Some((_, resume_url)) => Ok(resume_url.clone()),
            None => tokio::select! {
                r = inner.rest.json::<Gateway>(LightMethod::Get, Route::Gateway, None::<&()>) => r.map(|g| g.url),
                _ = cancel.cancelled() => return Ok(()),
            },
        };
        let end = match url {
            Ok(url) => connection(inner, ingress, cancel, &url, &mut conn).await?,
            Err(ChannelError::Unauthorized(m)) => return Err(ChannelError::Unauthorized(m)),
            Err(e) => {
                tracing::warn!(error = %e, "cannot get the Discord gateway URL; will retry");
                End::Reconnect { resume: true, wait: Duration::from_secs(1) }
            }
        };
        let End::Reconnect { resume, wait } = end else { return Ok(()) };
        if !resume {
            conn.session = None;
            conn.seq = None;
        }
        // A connection that got going and lasted resets the backoff; quick drops keep backing
        // off, so a gateway that fails right after Ready is not hammered with Identifies.
        if conn.healthy && started.elapsed() >= STABLE {
            failures = 0;
        }
        let pause = wait.max(backoff(failures));
        failures += 1;
        tokio::select! {
            _ = sleep(pause) => {}
            _ = cancel.cancelled() => return Ok(()),
        }
    }
}

async fn send(ws: &mut Socket, payload: Value) -> bool {
    ws.send(Frame::Text(payload.to_string())).await.is_ok()
}

/// Reads frames until Hello; its heartbeat interval.
async fn hello(ws: &mut Socket) -> Option<Duration> {
    while let Some(Ok(frame)) = ws.next().await {
        if let Frame::Text(text) = frame {
            let env: Envelope = serde_json::from_str(&text).ok()?;
            if env.op == 10 {
                return env.d["heartbeat_interval"].as_u64().map(Duration::from_millis);
            }
        }
    }
    None
}

/// One websocket connection, from connect to its end.
async fn connection(
    inner: &Inner,
    ingress: &dyn Ingress,
    cancel: &CancellationToken,
    url: &str,
    conn: &mut Conn,
) -> Result<End, ChannelError> {
    conn.healthy = false;
    let full = format!("{}/?v=10&encoding=json", url.trim_end_matches('/'));
    let connected = tokio::select! {
        r = timeout(Duration::from_secs(30), tokio_tungstenite::connect_async(full.as_str())) => r,
        _ = cancel.cancelled() => return Ok(End::Cancelled),
    };
    let mut ws = match connected {
        Ok(Ok((ws, _))) => ws,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "cannot connect to the Discord gateway; will retry");
            return Ok(again());
        }
        Err(_) => return Ok(again()),
    };
    let Ok(Some(interval)) = timeout(Duration::from_secs(30), hello(&mut ws)).await else {
        tracing::warn!("the Discord gateway sent no Hello; reconnecting");
        return Ok(again());
    };
    let opening = match (&conn.session, conn.seq) {
        (Some((session_id, _)), Some(seq)) => {
            tracing::info!(seq, "resuming the Discord gateway session");
            json!({"op": 6, "d": {"token": inner.token, "session_id": session_id, "seq": seq}})
        }
        _ => {
            conn.session = None;
            conn.seq = None;
            json!({"op": 2, "d": {
                "token": inner.token,
                "intents": intents().bits(),
                "properties": {"os": std::env::consts::OS, "browser": "butler", "device": "butler"},
            }})
        }
    };
    if !send(&mut ws, opening).await {
        return Ok(again());
    }
    let mut next_beat = Instant::now() + interval.mul_f64(jitter());
    let mut acked = true;
    loop {
        let frame = tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                let _ = ws.close(None).await;
                return Ok(End::Cancelled);
            }
            _ = sleep_until(next_beat) => {
                if !acked {
                    tracing::warn!("the Discord gateway did not acknowledge the last heartbeat; reconnecting");
                    return Ok(again());
                }
                if !send(&mut ws, json!({"op": 1, "d": conn.seq})).await {
                    return Ok(again());
                }
                acked = false;
                next_beat = Instant::now() + interval;
                continue;
            }
            frame = ws.next() => frame,
        };
        let text = match frame {
            Some(Ok(Frame::Text(text))) => text,
            Some(Ok(Frame::Close(close))) => return closed(close),
            Some(Ok(_)) => continue,
            Some(Err(e)) => {
                tracing::info!(error = %e, "the Discord gateway connection dropped; resuming");
                return Ok(again());
            }
            None => {
                tracing::info!("the Discord gateway connection closed; resuming");
                return Ok(again());
            }
        };
        let env: Envelope = match serde_json::from_str(&text) {
            Ok(env) => env,
            Err(e) => {
                tracing::warn!(error = %e, "unreadable gateway payload");
                continue;
            }
        };
        match env.op {
            0 => {
                let kind = env.t.unwrap_or_default();
                if dispatch(inner, ingress, conn, &kind, env.d).await.is_err() {
                    // Not processed: resume from the last processed number, Discord replays it.
                    return Ok(again());
                }
                if let Some(s) = env.s {
                    conn.seq = Some(s);
                }
            }
            1 => {
                // Discord asks for a heartbeat now.
                let sent = send(&mut ws, json!({"op": 1, "d": conn.seq})).await;
                if !sent {
                    return Ok(again());
                }
            }
            7 => {
                tracing::info!("Discord asked Butler to reconnect; resuming");
                return Ok(again());
            }
            9 => {
                let resumable = env.d.as_bool().unwrap_or(false);
                tracing::info!(resumable, "Discord invalidated the gateway session");
                let wait = if resumable { Duration::ZERO } else { Duration::from_secs_f64(1.0 + 4.0 * jitter()) };
                return Ok(End::Reconnect { resume: resumable, wait });
            }
            11 => acked = true,
            _ => {}
        }
    }
}

/// A close frame: fatal codes end the channel, others reconnect.
fn closed(close: Option<CloseFrame<'_>>) -> Result<End, ChannelError> {
    let code = close.as_ref().map(|c| u16::from(c.code)).unwrap_or(1005);
    if let Some((_, why)) = FATAL.iter().find(|(c, _)| *c == code) {
        tracing::error!(code, "{why}");
        return Err(if code == 4004 {
            ChannelError::Unauthorized(why.to_string())
        } else {
            ChannelError::Rejected(format!("{why} (gateway close {code})"))
        });
    }
    // 4007 (invalid seq) and 4009 (session timed out) cannot be resumed.
    let resume = !matches!(code, 4007 | 4009);
    tracing::info!(code, resume, "the Discord gateway closed the connection");
    Ok(End::Reconnect { resume, wait: Duration::ZERO })
}

/// Handles one dispatch; `Err` when its event could not be made durable.
async fn dispatch(
    inner: &Inner,
    ingress: &dyn Ingress,
    conn: &mut Conn,
    kind: &str,
    d: Value,
) -> Result<(), NotDurable> {
    match kind {
        "READY" => match serde_json::from_value::<Ready>(d) {
            Ok(ready) => {
                let user_id = ready.user.id.parse().unwrap_or(0);
                *lock(&inner.me) = Me { user_id, name: ready.user.username.clone() };
                conn.session = Some((ready.session_id, ready.resume_gateway_url));
                conn.healthy = true;
                tracing::info!(bot = %ready.user.username, id = user_id, "connected to the Discord gateway");
            }
            Err(e) => tracing::warn!(error = %e, "unreadable Ready"),
        },
        "RESUMED" => {
            conn.healthy = true;
            tracing::info!("resumed the Discord gateway session");
        }
        "MESSAGE_CREATE" => {
            let thread = d["channel_type"].as_u64().is_some_and(|t| THREAD_TYPES.contains(&t));
            let msg: Message = match serde_json::from_value(d) {
                Ok(m) => m,
                Err(e) => {
                    tracing::warn!(error = %e, "unreadable MESSAGE_CREATE; skipped");
                    return Ok(());
                }
            };
            let event = {
                let me = lock(&inner.me).clone();
                let mut memory = lock(&inner.memory);
                if thread {
                    memory.thread(msg.channel_id.get());
                }
                if msg.author.id.get() == me.user_id {
                    memory.spoke(msg.channel_id.get());
                    memory.spoke(msg.id.get());
                }
                inbound::message(&msg, &me, &memory)
            };
            if let Some(event) = event {
                accept(ingress, event).await?;
            }
        }
        "INTERACTION_CREATE" => interaction(inner, ingress, d).await?,
        other => inbound::learn_threads(&mut lock(&inner.memory), other, &d),
    }
    Ok(())
}

/// Hands an event to the inbox, retrying briefly while it is unavailable.
async fn accept(ingress: &dyn Ingress, event: InboundEvent) -> Result<(), NotDurable> {
    for attempt in 0..3u32 {
        match ingress.accept(event.clone()).await {
            Ok(_) => return Ok(()),
            Err(IngressError::Invalid(why)) => {
                tracing::warn!(event = %event.id, %why, "Discord event refused as invalid; skipped");
                return Ok(());
            }
            Err(IngressError::Unavailable(why)) => {
                tracing::warn!(event = %event.id, %why, attempt, "could not store a Discord event");
                sleep(Duration::from_millis(200 << attempt)).await;
            }
        }
    }
    Err(NotDurable)
}

/// INTERACTION_CREATE: a click is made durable, then acknowledged (a deferred update) - the
/// approval's message is edited to its outcome later by the outbox. Slash commands get a short
/// private note that Butler has none.
async fn interaction(inner: &Inner, ingress: &dyn Ingress, d: Value) -> Result<(), NotDurable> {
    let i: Interaction = match serde_json::from_value(d) {
        Ok(i) => i,
        Err(e) => {
            tracing::warn!(error = %e, "unreadable INTERACTION_CREATE; skipped");
            return Ok(());
        }
    };
    if i.kind != MESSAGE_COMPONENT {
        if matches!(i.kind, APPLICATION_COMMAND | MODAL_SUBMIT) {
            let note = CreateInteractionResponseMessage::new().content(crate::NO_COMMANDS).ephemeral(true);
            respond(inner, &i, &CreateInteractionResponse::Message(note)).await;
        }
        return Ok(());
    }
    let event = match inbound::click(&i) {
        Ok(event) => event,
        Err(why) => {
            tracing::warn!(%why, "a click Butler cannot read; skipped");
            return Ok(());
        }
    };
    let pending = inner.acks.start(&i.token);
    let stored = accept(ingress, event).await;
    if stored.is_ok() {
        respond(inner, &i, &CreateInteractionResponse::Acknowledge).await;
    }
    inner.acks.done(&i.token, pending);
    stored
}

/// POST /interactions/{id}/{token}/callback.
async fn respond(inner: &Inner, i: &Interaction, response: &CreateInteractionResponse) {
    let Ok(interaction_id) = snowflake(&i.id) else { return };
    let route = Route::InteractionResponse { interaction_id, token: &i.token };
    let body = serde_json::to_vec(response).ok();
    match timeout(Duration::from_secs(5), inner.rest.call(LightMethod::Post, route, body)).await {
        Ok(Ok(_)) => {}
        // A replayed click was acknowledged the first time.
        Ok(Err(e)) => tracing::info!(error = %e, interaction = %i.id, "click acknowledgement refused"),
        Err(_) => tracing::warn!(interaction = %i.id, "click acknowledgement timed out"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intents_are_guilds_guild_messages_dms_and_content() {
        assert_eq!(intents().bits(), 1 | (1 << 9) | (1 << 12) | (1 << 15));
        assert_eq!(backoff(0), Duration::ZERO);
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(30), Duration::from_secs(64));
    }

    #[test]
    fn callbacks_serialize_as_discord_expects() {
        // serenity writes `"data": null` beside the type, which Discord accepts.
        let ack = serde_json::to_value(CreateInteractionResponse::Acknowledge).unwrap();
        assert_eq!(ack["type"], 6, "DEFERRED_UPDATE_MESSAGE");
        let pong = serde_json::to_value(CreateInteractionResponse::Pong).unwrap();
        assert_eq!(pong["type"], 1, "PONG");
        let note = CreateInteractionResponseMessage::new().content("x").ephemeral(true);
        let note = serde_json::to_value(CreateInteractionResponse::Message(note)).unwrap();
        assert_eq!((note["type"].clone(), note["data"]["flags"].clone()), (json!(4), json!(64)));
    }
}
