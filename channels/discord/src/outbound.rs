//! Butler's messages on Discord: rendered Markdown, buttons as action rows, replies, the nonce
//! that makes a repeated send a no-op, edits spaced a second apart, typing, and private answers
//! to clicks (ephemeral follow-ups on the click's interaction).
//!
//! A message carrying a file is created as `multipart/form-data` (`payload_json` with the same
//! content, nonce and reply as any message, and the file as `files[0]`), through serenity's
//! `CreateAttachment`/`Multipart`; serenity holds the file in memory while it is sent, which
//! Discord's upload limit (10 MiB for most bots, answered 413 above it) bounds.
//!
//! Every message is sent with `allowed_mentions` that parse nothing, so nothing Butler says can
//! ping anyone, and, unless the settings allow link previews, with the SUPPRESS_EMBEDS flag on
//! create and edit (an embed is fetched by Discord at once, so a link with a secret in it would
//! leak without anyone clicking). This module must never decide what to say.

use crate::inbound::split_handle;
use crate::render::render;
use crate::rest::snowflake;
use crate::state::lock;
use crate::Inner;
use butler_channel::{Button, ButtonStyle, ChannelError, ConversationRef, MessageRef, OutFile, Outbound};
use serenity::builder::{
    CreateActionRow, CreateAllowedMentions, CreateAttachment, CreateButton, CreateInteractionResponseFollowup,
    CreateMessage, EditMessage,
};
use serenity::http::{LightMethod, Multipart, MultipartUpload, Route};
use serenity::model::application::ButtonStyle as Style;
use serenity::model::channel::{Message, MessageFlags, MessageReference, Nonce};
use serenity::model::id::{ApplicationId, ChannelId, MessageId};
use std::time::Duration;

/// The id recorded for a bare click acknowledgement: the click was already acknowledged (a
/// deferred update) when it arrived, so there is nothing to send and nothing to edit later.
pub const ACKNOWLEDGED: &str = "acknowledged";

/// Discord's limits on message components.
const BUTTONS_PER_ROW: usize = 5;
const ROWS: usize = 5;
const LABEL_MAX: usize = 80;
const CUSTOM_ID_MAX: usize = 100;
/// Discord keeps nonces of at most 25 characters.
const NONCE_LEN: usize = 25;

/// The channel a conversation names: a thread is a channel of its own on Discord.
fn channel_of(c: &ConversationRef) -> Result<ChannelId, ChannelError> {
    snowflake(c.thread.as_deref().unwrap_or(&c.id))
}

fn clip(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

/// Buttons as action rows of up to five, in order.
pub(crate) fn rows(buttons: &[Button]) -> Vec<CreateActionRow> {
    buttons
        .chunks(BUTTONS_PER_ROW)
        .take(ROWS)
        .map(|row| {
            CreateActionRow::Buttons(
                row.iter()
                    .map(|b| {
                        let style = match b.style {
                            ButtonStyle::Primary => Style::Primary,
                            ButtonStyle::Default => Style::Secondary,
                            ButtonStyle::Danger => Style::Danger,
                        };
                        CreateButton::new(clip(&b.action, CUSTOM_ID_MAX)).label(clip(&b.label, LABEL_MAX)).style(style)
                    })
                    .collect(),
            )
        })
        .collect()
}

/// An idempotency key squeezed into Discord's 25-character nonce (two FNV-1a hashes).
pub(crate) fn nonce(key: &str) -> String {
    let fnv = |seed: u64| key.bytes().fold(seed, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    let mut hex = format!("{:016x}{:016x}", fnv(0xcbf2_9ce4_8422_2325), fnv(0x8422_2325_cbf2_9ce4));
    hex.truncate(NONCE_LEN);
    hex
}

/// The content to send: rendered, and never empty (Discord refuses empty messages).
fn content(text: &str) -> String {
    let out = render(text);
    if out.trim().is_empty() {
        "\u{200b}".into()
    } else {
        out
    }
}

/// The content a new message should show: its rendered text, which a message carrying a file
/// may leave empty (the file is the message).
fn wanted(msg: &Outbound) -> String {
    if msg.file.is_some() {
        Some(render(&msg.text)).filter(|t| !t.trim().is_empty()).unwrap_or_default()
    } else {
        content(&msg.text)
    }
}

/// The flags every message and edit carries: SUPPRESS_EMBEDS (no link previews) unless
/// `previews` allows them, then none (Discord's default).
pub(crate) fn no_embeds(previews: bool) -> Option<MessageFlags> {
    (!previews).then_some(MessageFlags::SUPPRESS_EMBEDS)
}

/// The body of a new message (with a file: its metadata, `attachments[0]`, whose bytes go in
/// the form part `files[0]`); `previews`: let Discord embed link previews.
pub(crate) fn create_body(msg: &Outbound, channel: ChannelId, previews: bool) -> CreateMessage {
    let mut body = CreateMessage::new().allowed_mentions(CreateAllowedMentions::new()).components(rows(&msg.buttons));
    if let Some(flags) = no_embeds(previews) {
        body = body.flags(flags);
    }
    let text = wanted(msg);
    if !text.trim().is_empty() {
        body = body.content(text);
    }
    if let Some(file) = &msg.file {
        body = body.add_file(CreateAttachment::bytes(Vec::new(), file.name.clone()));
    }
    if let Some(key) = &msg.key {
        body = body.nonce(Nonce::String(nonce(key))).enforce_nonce(true);
    }
    if let Some(id) = msg.reply_to.as_deref().and_then(|r| snowflake::<MessageId>(r).ok()) {
        let mut reference = MessageReference::from((channel, id));
        reference.fail_if_not_exists = Some(false);
        body = body.reference_message(reference);
    }
    body
}

/// The body of an edit (text and buttons replaced; no buttons removes them); `previews`: let
/// Discord embed link previews.
pub(crate) fn edit_body(msg: &Outbound, previews: bool) -> EditMessage {
    let body = EditMessage::new()
        .content(content(&msg.text))
        .allowed_mentions(CreateAllowedMentions::new())
        .components(rows(&msg.buttons));
    match no_embeds(previews) {
        Some(flags) => body.flags(flags),
        None => body,
    }
}

/// The `multipart/form-data` of a message with `file`: `payload_json` (the message, nonce
/// included) and `files[0]`, read from disk by serenity and named as the recipient sees it.
async fn file_form(body: &CreateMessage, file: &OutFile) -> Result<Multipart, ChannelError> {
    let mut attachment = CreateAttachment::path(&file.path)
        .await
        .map_err(|e| ChannelError::Rejected(format!("cannot read the file to send ({}): {e}", file.name)))?;
    attachment.filename.clone_from(&file.name);
    let payload = serde_json::to_string(body).map_err(|e| ChannelError::Rejected(e.to_string()))?;
    Ok(Multipart {
        upload: MultipartUpload::Attachments(vec![attachment]),
        fields: Vec::new(),
        payload_json: Some(payload),
    })
}

impl Inner {
    pub(crate) async fn send(&self, msg: &Outbound) -> Result<MessageRef, ChannelError> {
        if let Some(to) = &msg.private_to {
            if msg.text.trim().is_empty() {
                return Ok(MessageRef { conversation: msg.conversation.clone(), id: ACKNOWLEDGED.into() });
            }
            if let Some(handle) = &to.interaction {
                return self.answer_click(msg, handle).await;
            }
        }
        let channel_id = channel_of(&msg.conversation)?;
        let body = create_body(msg, channel_id, self.previews);
        let route = Route::ChannelMessages { channel_id };
        let sent: Message = match &msg.file {
            None => self.rest.json(LightMethod::Post, route, Some(&body)).await?,
            Some(file) => self.rest.multipart(LightMethod::Post, route, file_form(&body, file).await?).await?,
        };
        {
            let mut memory = lock(&self.memory);
            memory.spoke(channel_id.get());
            memory.spoke(sent.id.get());
        }
        let target = MessageRef { conversation: msg.conversation.clone(), id: sent.id.to_string() };
        self.pacer.mark(&target.id);
        // With enforce_nonce a send repeated within Discord's window returns the message the
        // first attempt made, perhaps with older text (a streamed draft): bring it up to date.
        let want = wanted(msg);
        if sent.content.trim() != want.trim() || sent.components.len() != rows(&msg.buttons).len() {
            self.edit(&target, msg).await?;
        }
        Ok(target)
    }

    pub(crate) async fn edit(&self, target: &MessageRef, msg: &Outbound) -> Result<(), ChannelError> {
        if target.id == ACKNOWLEDGED {
            return Ok(());
        }
        let message_id: MessageId = snowflake(&target.id)?;
        if let Some(handle) = msg.private_to.as_ref().and_then(|p| p.interaction.as_deref()) {
            let (application_id, token) = self.handle(handle)?;
            let mut body = CreateInteractionResponseFollowup::new().content(content(&msg.text));
            if let Some(flags) = no_embeds(self.previews) {
                body = body.flags(flags);
            }
            let route = Route::WebhookFollowupMessage { application_id, token, message_id };
            return self.rest.json::<Message>(LightMethod::Patch, route, Some(&body)).await.map(|_| ());
        }
        let channel_id = channel_of(&target.conversation)?;
        self.pacer.wait(&target.id).await;
        let result = self
            .rest
            .json::<Message>(
                LightMethod::Patch,
                Route::ChannelMessage { channel_id, message_id },
                Some(&edit_body(msg, self.previews)),
            )
            .await;
        self.pacer.mark(&target.id);
        result.map(|_| ())
    }

    pub(crate) async fn typing(&self, conversation: &ConversationRef) -> Result<(), ChannelError> {
        let channel_id = channel_of(conversation)?;
        self.rest.call(LightMethod::Post, Route::ChannelTyping { channel_id }, None).await.map(|_| ())
    }

    fn handle<'a>(&self, handle: &'a str) -> Result<(ApplicationId, &'a str), ChannelError> {
        let (app, token) =
            split_handle(handle).ok_or_else(|| ChannelError::Rejected("not a Discord interaction handle".into()))?;
        Ok((snowflake(app)?, token))
    }

    /// A private answer to a click: an ephemeral follow-up only the clicker sees, sent after
    /// the click's acknowledgement.
    async fn answer_click(&self, msg: &Outbound, handle: &str) -> Result<MessageRef, ChannelError> {
        let (application_id, token) = self.handle(handle)?;
        self.acks.settled(token, Duration::from_secs(5)).await;
        let mut body = CreateInteractionResponseFollowup::new().content(content(&msg.text));
        if let Some(flags) = no_embeds(self.previews) {
            body = body.flags(flags);
        }
        let body = body.ephemeral(true).allowed_mentions(CreateAllowedMentions::new());
        let route = Route::WebhookFollowupMessages { application_id, token };
        let sent: Message = self.rest.json(LightMethod::Post, route, Some(&body)).await.map_err(|e| match e {
            // The acknowledgement (the HTTP endpoint's answer) may not have reached Discord yet.
            ChannelError::NotFound(m) => ChannelError::Transient(format!("the click is not acknowledged yet: {m}")),
            e => e,
        })?;
        Ok(MessageRef { conversation: msg.conversation.clone(), id: sent.id.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn outbound(text: &str) -> Outbound {
        Outbound::text("discord:290926798999357250".parse().unwrap(), text)
    }

    #[test]
    fn messages_carry_buttons_nonce_reply_and_no_pings() {
        let mut msg = outbound("__Approve__ this?");
        msg.buttons = vec![
            Button::new("Approve once", "ap:1:once", ButtonStyle::Primary),
            Button::new("Always for this session", "ap:1:session", ButtonStyle::Default),
            Button::new("Deny", "ap:1:deny", ButtonStyle::Danger),
        ];
        msg.key = Some("approval:1#0".into());
        msg.reply_to = Some("334385199974967042".into());
        let body = serde_json::to_value(create_body(&msg, ChannelId::new(290926798999357250), false)).unwrap();
        assert_eq!(body["content"], "**Approve** this?");
        assert_eq!(body["allowed_mentions"]["parse"], json!([]));
        assert_eq!(body["enforce_nonce"], true);
        assert_eq!(body["nonce"], nonce("approval:1#0"));
        assert_eq!(body["message_reference"]["message_id"], "334385199974967042");
        assert_eq!(body["message_reference"]["fail_if_not_exists"], false);
        let row = &body["components"][0];
        assert_eq!(row["type"], 1);
        let buttons: Vec<(i64, i64, &str, &str)> = row["components"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                (
                    b["type"].as_i64().unwrap(),
                    b["style"].as_i64().unwrap(),
                    b["custom_id"].as_str().unwrap(),
                    b["label"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            buttons,
            vec![
                (2, 1, "ap:1:once", "Approve once"),
                (2, 2, "ap:1:session", "Always for this session"),
                (2, 4, "ap:1:deny", "Deny")
            ]
        );
        // An edit without buttons removes them.
        let edit = serde_json::to_value(edit_body(&outbound("✅ Approved"), false)).unwrap();
        assert_eq!((edit["content"].as_str(), edit["components"].clone()), (Some("✅ Approved"), json!([])));
    }

    #[test]
    fn a_file_message_names_its_file_and_keeps_the_nonce() {
        let file =
            OutFile { path: "/tmp/x".into(), name: "chart.png".into(), mime: "image/png".into(), size: 3, photo: true };
        type Case = (&'static str, Option<&'static str>);
        let cases: [Case; 3] = [("Here is **the chart**", Some("Here is **the chart**")), ("", None), ("   ", None)];
        for (text, want) in cases {
            let mut msg = outbound(text);
            msg.key = Some("reply:1#0".into());
            msg.file = Some(file.clone());
            let body = serde_json::to_value(create_body(&msg, ChannelId::new(290926798999357250), false)).unwrap();
            assert_eq!(body["content"].as_str(), want, "{text:?}: the caption, or no content");
            assert_eq!(body["attachments"], json!([{"id": 0, "filename": "chart.png", "description": null}]));
            assert_eq!(
                (body["nonce"].as_str(), &body["enforce_nonce"]),
                (Some(nonce("reply:1#0").as_str()), &json!(true))
            );
            assert_eq!(wanted(&msg), want.unwrap_or(""));
        }
    }

    #[test]
    fn more_than_five_buttons_make_more_rows() {
        let buttons: Vec<Button> =
            (0..12).map(|i| Button::new(format!("b{i}"), format!("a{i}"), ButtonStyle::Default)).collect();
        let rows = serde_json::to_value(rows(&buttons)).unwrap();
        let sizes: Vec<usize> =
            rows.as_array().unwrap().iter().map(|r| r["components"].as_array().unwrap().len()).collect();
        assert_eq!(sizes, vec![5, 5, 2]);
    }

    #[test]
    fn nonces_fit_and_differ() {
        let a = nonce("reply:discord:message:334385199974967042#0");
        let b = nonce("reply:discord:message:334385199974967042#1");
        assert_eq!((a.len(), b.len()), (25, 25));
        assert_ne!(a, b);
        assert_eq!(a, nonce("reply:discord:message:334385199974967042#0"));
        assert_eq!(content(""), "\u{200b}");
    }
}
