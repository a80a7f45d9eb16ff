//! Events API payloads (the same JSON over HTTP and Socket Mode) as [`InboundEvent`]s.
//!
//! - Event id `slack:event:<event_id>`: a retry or a repeat of the same event has the same id,
//!   so the inbox drops it.
//! - A DM (`channel_type = "im"`) is `slack:<D…>` (`/thread_ts` when written in a thread), kind
//!   Direct, always addressed.
//! - In a channel a thread is a session: `slack:<C…>/<thread_ts>`, where a new top-level
//!   message is its own thread (`ts`), so Butler always answers in the thread. It is addressed
//!   when it is an `app_mention`, or a reply in a thread Butler has spoken in ([`Threads`]).
//!   A plain `message` that mentions Butler is skipped: its `app_mention` twin is the one used.
//! - Butler's own messages are skipped; other bots' messages are marked `is_bot` (triage drops
//!   them). Edits (`message_changed`), deletions and other subtypes are skipped: Butler answers
//!   what was sent, not later edits (send a new message to ask again).
//! - Shared files (`files`, with or without the `file_share` subtype, in channels, threads and
//!   DMs) become the event's attachments ([`crate::attach`]); the text stays the message's own
//!   text, which may then be empty.
//!
//! This module only maps: it must never call Slack, store anything or decide access.

use crate::attach::{attachment, SlackFile};
use crate::interact::usable;
use crate::CHANNEL;
use butler_channel::{Actor, ConversationKind, ConversationRef, EventBody, EventId, Identity, InboundEvent};
use serde::Deserialize;
use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;

/// Who Butler is on Slack (from auth.test).
#[derive(Clone, Debug)]
pub struct Me {
    pub user_id: String,
    pub bot_id: Option<String>,
}

/// What to do with one Events API payload.
#[derive(Debug, PartialEq)]
pub enum Inbound {
    /// Answer the URL check with this challenge.
    Challenge(String),
    /// Store this event, then acknowledge.
    Event(Box<InboundEvent>),
    /// Acknowledge and store nothing, for this reason.
    Skip(&'static str),
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(rename = "type")]
    kind: String,
    challenge: Option<String>,
    event_id: Option<String>,
    event: Option<Event>,
}

#[derive(Deserialize, Default)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    subtype: Option<String>,
    channel: Option<String>,
    channel_type: Option<String>,
    user: Option<String>,
    bot_id: Option<String>,
    #[serde(default)]
    text: String,
    ts: Option<String>,
    thread_ts: Option<String>,
    hidden: Option<bool>,
    #[serde(default)]
    files: Vec<SlackFile>,
}

/// Threads (`channel/thread_ts`) Butler has spoken in, so replies there are for Butler without
/// a mention. Bounded (oldest forgotten first) and in memory only: after a restart Butler
/// needs a mention again in older threads.
pub struct Threads {
    cap: usize,
    inner: Mutex<(HashSet<String>, VecDeque<String>)>,
}

impl Threads {
    pub fn new(cap: usize) -> Self {
        Self { cap: cap.max(1), inner: Mutex::new((HashSet::new(), VecDeque::new())) }
    }

    pub fn add(&self, channel: &str, thread_ts: &str) {
        let key = format!("{channel}/{thread_ts}");
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let (set, order) = &mut *g;
        if set.insert(key.clone()) {
            order.push_back(key);
            while order.len() > self.cap {
                if let Some(old) = order.pop_front() {
                    set.remove(&old);
                }
            }
        }
    }

    pub fn contains(&self, channel: &str, thread_ts: &str) -> bool {
        let g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        g.0.contains(&format!("{channel}/{thread_ts}"))
    }
}

/// Unix milliseconds of a Slack `ts` ("1515449483.000108"); saturating, not overflowing, on an
/// absurd one (fuzz/regressions/slack_event/).
pub fn ts_ms(ts: &str) -> i64 {
    let (secs, frac) = ts.split_once('.').unwrap_or((ts, "0"));
    let ms: i64 = frac.get(..3).unwrap_or(frac).parse().unwrap_or(0);
    secs.parse::<i64>().unwrap_or(0).saturating_mul(1000).saturating_add(ms)
}

/// Slack's markup in a user's text as plain text: `<@U1>` -> `@U1`, `<#C1|general>` ->
/// `#general`, `<https://x|label>` -> `label (https://x)`, entities decoded. The mention of
/// Butler itself is removed.
pub fn plain_text(text: &str, me: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('>') else {
            out.push_str(&rest[open..]);
            rest = "";
            break;
        };
        let inner = &after[..close];
        let (target, label) = inner.split_once('|').map_or((inner, None), |(t, l)| (t, Some(l)));
        match target.chars().next() {
            Some('@') if &target[1..] == me => {}
            Some('@') | Some('#') => out.push_str(&format!("{}{}", &target[..1], label.unwrap_or(&target[1..]))),
            Some('!') => out.push_str(&format!("@{}", label.unwrap_or(&target[1..]))),
            _ => match label {
                Some(l) if l != target => out.push_str(&format!("{l} ({target})")),
                _ => out.push_str(target),
            },
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    let decoded = out.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&");
    decoded.split(' ').filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ").trim().to_string()
}

fn is_dm(channel: &str, channel_type: Option<&str>) -> bool {
    channel_type.map_or(channel.starts_with('D'), |t| t == "im")
}

/// Maps one Events API payload. `threads` is read (is this reply in Butler's thread?) and
/// written (a mention makes its thread Butler's).
pub fn events_api(body: &[u8], me: &Me, threads: &Threads) -> Result<Inbound, String> {
    let env: Envelope = serde_json::from_slice(body).map_err(|e| format!("not an Events API payload: {e}"))?;
    match env.kind.as_str() {
        "url_verification" => return Ok(Inbound::Challenge(env.challenge.unwrap_or_default())),
        "event_callback" => {}
        _ => return Ok(Inbound::Skip("not an event callback")),
    }
    let event_id = env.event_id.filter(|id| !id.is_empty()).ok_or("the event has no event_id")?;
    let mut ev = env.event.unwrap_or_default();
    // Ids that could not be part of a name read back from the inbox are none (see `usable`).
    for id in [&mut ev.channel, &mut ev.user, &mut ev.bot_id, &mut ev.ts, &mut ev.thread_ts] {
        if id.as_deref().is_some_and(|id| !usable(id)) {
            *id = None;
        }
    }
    let (Some(channel), Some(ts)) = (ev.channel.clone(), ev.ts.clone()) else {
        return Ok(Inbound::Skip("not a message"));
    };
    let own = ev.user.as_deref() == Some(&me.user_id) || (ev.bot_id.is_some() && ev.bot_id == me.bot_id);
    if own {
        return Ok(Inbound::Skip("Butler's own message"));
    }
    let is_bot = ev.bot_id.is_some() || ev.subtype.as_deref() == Some("bot_message");
    let mention = format!("<@{}>", me.user_id);
    let (conversation, kind, addressed) = match ev.kind.as_str() {
        "app_mention" => {
            let thread = ev.thread_ts.clone().unwrap_or_else(|| ts.clone());
            threads.add(&channel, &thread);
            (ConversationRef::new(CHANNEL, &channel).with_thread(Some(thread)), ConversationKind::Group, true)
        }
        "message" => {
            match ev.subtype.as_deref() {
                None | Some("thread_broadcast" | "file_share" | "me_message" | "bot_message") => {}
                Some("message_changed") => return Ok(Inbound::Skip("an edit (edits are not answered)")),
                Some(_) => return Ok(Inbound::Skip("a message subtype Butler does not answer")),
            }
            if ev.hidden == Some(true) {
                return Ok(Inbound::Skip("a hidden message"));
            }
            if is_dm(&channel, ev.channel_type.as_deref()) {
                let conv = ConversationRef::new(CHANNEL, &channel).with_thread(ev.thread_ts.clone());
                (conv, ConversationKind::Direct, true)
            } else if ev.text.contains(&mention) {
                return Ok(Inbound::Skip("a mention (answered through its app_mention event)"));
            } else {
                let thread = ev.thread_ts.clone().unwrap_or_else(|| ts.clone());
                let ours = ev.thread_ts.is_some() && threads.contains(&channel, &thread);
                let conv = ConversationRef::new(CHANNEL, &channel).with_thread(Some(thread));
                (conv, ConversationKind::Group, ours)
            }
        }
        _ => return Ok(Inbound::Skip("an event type Butler does not handle")),
    };
    let Some(user) = ev.user.clone().or_else(|| ev.bot_id.clone()) else {
        return Ok(Inbound::Skip("no sender"));
    };
    let text = plain_text(&ev.text, &me.user_id);
    let attachments: Vec<_> = ev.files.iter().filter_map(attachment).collect();
    if text.is_empty() && attachments.is_empty() {
        return Ok(Inbound::Skip("no text"));
    }
    Ok(Inbound::Event(Box::new(InboundEvent {
        id: EventId(format!("slack:event:{event_id}")),
        actor: Actor { identity: Identity::new(CHANNEL, user), display_name: None, is_bot },
        at_ms: ts_ms(&ts),
        attachments,
        conversation,
        kind,
        addressed,
        reply_to: ev.thread_ts.filter(|t| *t != ts),
        message_id: Some(ts),
        body: EventBody::Message { text },
    })))
}

#[cfg(test)]
mod tests;
