//! Telegram, WhatsApp, Signal and email: what arrives from the platform read as the channel's
//! intake reads it, up to the events handed to the ingress.
//!
//! Each body must never call a platform or an ingress; it only reads, maps and checks.

use crate::harness::{check_event, header, headers_with, request};
use butler_channel::signature;
use butler_email::parse::{mail, Rules};
use butler_email::{Proof, Sender};
use butler_signal::events::{frame, frame_end, MAX_FRAME};
use butler_telegram::normalize::{event as telegram_event, repair};
use butler_telegram::BotIdentity;
use serde_json::Value;
use teloxide::types::{Update, UpdateKind};

/// The WhatsApp app secret and phone number id the deliveries are checked against.
const APP_SECRET: &[u8] = b"fuzz-app-secret";
const PHONE_NUMBER_ID: &str = "106540352242922";

/// `POST /channels/telegram/webhook` after its secret check: teloxide's `Update`, the repair of
/// one teloxide cannot read, the event.
pub fn telegram_update(data: &[u8]) {
    let me = BotIdentity { id: 7_000_000_001, username: "butler_bot".into() };
    let Ok(update) = serde_json::from_slice::<Update>(data) else { return };
    let update = match &update.kind {
        UpdateKind::Error(_) => match serde_json::from_slice::<Value>(data).ok().and_then(|raw| repair(&raw)) {
            Some(fixed) => fixed,
            None => return,
        },
        _ => update,
    };
    if let Some(ev) = telegram_event(&update, &me) {
        check_event(&ev, "telegram");
        assert_eq!(ev.id.0, format!("telegram:update:{}", update.id.0));
    }
}

/// `POST /channels/whatsapp/webhook`: `X-Hub-Signature-256` over the raw body (a valid one is
/// added when the input has none), then the delivery.
pub fn whatsapp_notification(data: &[u8]) {
    let req = request(data);
    let headers = headers_with(&req, |_| {
        vec![(butler_whatsapp::SIGNATURE_HEADER, format!("sha256={}", signature::sign_hex(APP_SECRET, &[req.body])))]
    });
    let signed_here = req.headers.as_ref().is_none_or(|h| !h.contains_key(butler_whatsapp::SIGNATURE_HEADER));
    let checked = signature::digest(header(&headers, butler_whatsapp::SIGNATURE_HEADER), "sha256=")
        .and_then(|sig| signature::check(APP_SECRET, &[req.body], &sig));
    if signed_here {
        assert_eq!(checked, Ok(()), "a body signed with the app secret must pass");
    }
    if checked.is_err() {
        return;
    }
    let forged = signature::digest(header(&headers, butler_whatsapp::SIGNATURE_HEADER), "sha256=")
        .and_then(|sig| signature::check(b"another secret", &[req.body], &sig));
    assert!(forged.is_err(), "a signature must not pass with another secret");
    let Ok(value) = serde_json::from_slice::<Value>(req.body) else { return };
    let delivery = butler_whatsapp::normalize::delivery(&value, PHONE_NUMBER_ID);
    for ev in &delivery.events {
        check_event(ev, "whatsapp");
    }
}

/// signal-cli's event stream (`GET /api/v1/events`, Server-Sent Events) read piece by piece as
/// the channel reads it: frames cut at blank lines, at most [`MAX_FRAME`] bytes held, each
/// `receive` frame's JSON made an event. The input is cut in several ways; every cut must give
/// the same events. (Byte by byte only for short inputs: the channel looks for a frame's end
/// from the start of what it holds, which byte by byte is quadratic.)
pub fn signal_envelope(data: &[u8]) {
    let me = butler_signal::normalize::Me {
        number: "+15550000001".into(),
        uuid: Some("9d4428ac-7fe6-4a7e-9fbd-4b1e0ac3d7b2".into()),
    };
    let mut first: Option<Vec<String>> = None;
    for pieces in crate::harness::cuts(data).into_iter().filter(|p| p.len() <= 2048) {
        let mut buf: Vec<u8> = Vec::new();
        let mut ids = Vec::new();
        'stream: for piece in pieces {
            buf.extend_from_slice(piece);
            while let Some((end, sep)) = frame_end(&buf) {
                let raw = String::from_utf8_lossy(&buf[..end]).into_owned();
                buf.drain(..end + sep);
                let Some((event, data)) = frame(&raw) else { continue };
                if event != "receive" && event != "message" {
                    continue;
                }
                let Ok(item) = serde_json::from_str::<Value>(&data) else { continue };
                if let Ok(ev) = butler_signal::normalize::event(&item, &me) {
                    check_event(&ev, "signal");
                    ids.push(ev.id.0.clone());
                }
            }
            if buf.len() > MAX_FRAME {
                ids.push("(the stream ends: a frame over the cap)".into());
                break 'stream;
            }
        }
        match &first {
            None => first = Some(ids),
            Some(want) => assert_eq!(&ids, want, "the events depend on where the stream was cut"),
        }
    }
}

/// A mail from the mailbox: read with rules that trust its sender (so the whole mail is read)
/// and with rules that ask for DKIM or SPF from another authserv-id.
pub fn email_mime(data: &[u8]) {
    let from = mail_parser::MessageParser::default().parse(data).and_then(|m| {
        m.from().and_then(|a| a.first()).and_then(|a| a.address()).map(|a| a.trim().to_ascii_lowercase())
    });
    let pattern = from.unwrap_or_else(|| "someone@example.com".into());
    let trusting = Rules {
        address: "butler@example.org".into(),
        senders: vec![Sender { pattern: pattern.clone(), proof: Proof::None }],
        authserv_id: None,
    };
    let strict = Rules {
        address: "butler@example.org".into(),
        senders: vec![Sender { pattern, proof: Proof::DkimOrSpf }],
        authserv_id: Some("mx.example.org".into()),
    };
    for rules in [trusting, strict] {
        if let Ok(m) = mail(data, 7, 42, &rules) {
            check_event(&m.event, "email");
            for (n, a) in m.event.attachments.iter().enumerate() {
                assert_eq!(a.file_id, format!("7:42:{n}"), "attachment ids name their place in the mail");
            }
        }
    }
}
