//! Delivery: sendMessage / editMessageText in HTML with inline keyboards, answerCallbackQuery
//! for private answers to clicks, sendChatAction for typing, all through the send scheduler,
//! and Telegram's errors mapped to what the outbox should do next (`NotModified` is success,
//! `RateLimited` is "try later", `NotFound` sends anew).
//!
//! Every sendMessage and editMessageText asks for no link preview (`link_preview_options` with
//! `is_disabled`) unless the settings allow previews: a preview is fetched by Telegram at once,
//! so a link with a secret in it would leak without anyone clicking.
//!
//! It must never drop a message: a 429 is waited out (or handed back as `RateLimited`), and a
//! rendering Telegram refuses is re-sent as plain text rather than lost.

use crate::render::{clip_utf16, plain, to_html};
use crate::{TelegramChannel, MAX_CALLBACK_DATA, MAX_LEN};
use butler_channel::{Button, ChannelError, ConversationRef, MessageRef, Outbound};
use std::future::{Future, IntoFuture};
use std::time::Duration;
use teloxide::payloads::{
    AnswerCallbackQuerySetters, EditMessageReplyMarkupSetters, EditMessageTextSetters, SendChatActionSetters,
    SendMessageSetters,
};
use teloxide::requests::Requester;
use teloxide::types::{
    CallbackQueryId, ChatAction, ChatId, InlineKeyboardButton, InlineKeyboardMarkup, LinkPreviewOptions, MessageId,
    ParseMode, ReplyParameters, ThreadId,
};
use teloxide::{ApiError, RequestError};

/// Longest a streaming draft waits for its slot; past it the edit is skipped for now.
const DRAFT_MAX_WAIT: Duration = Duration::from_secs(2);
/// Longest a final message waits in the adapter; past it the outbox retries later.
const SEND_MAX_WAIT: Duration = Duration::from_secs(30);
/// Attempts of one call that keep getting 429.
const ATTEMPTS: usize = 4;
/// Telegram's limit on a callback answer's text.
const MAX_ALERT: usize = 200;

pub(crate) fn chat_of(c: &ConversationRef) -> Result<ChatId, ChannelError> {
    c.id.parse().map(ChatId).map_err(|_| ChannelError::Rejected(format!("`{c}` is not a Telegram chat")))
}

pub(crate) fn thread_of(c: &ConversationRef) -> Option<ThreadId> {
    c.thread.as_deref().and_then(|t| t.parse().ok()).map(|t| ThreadId(MessageId(t)))
}

fn message_id(id: &str) -> Result<MessageId, ChannelError> {
    id.parse().map(MessageId).map_err(|_| ChannelError::NotFound(format!("`{id}` is not a Telegram message id")))
}

/// The inline keyboard for `buttons`: one row when the labels are short, else one per row.
pub(crate) fn keyboard(buttons: &[Button]) -> Result<InlineKeyboardMarkup, ChannelError> {
    for b in buttons {
        if b.action.len() > MAX_CALLBACK_DATA || b.action.is_empty() {
            return Err(ChannelError::Rejected(format!(
                "button `{}`: callback data must be 1-{MAX_CALLBACK_DATA} bytes, `{}` is {}",
                b.label,
                b.action,
                b.action.len()
            )));
        }
    }
    if buttons.is_empty() {
        return Ok(InlineKeyboardMarkup::default());
    }
    let keys = buttons.iter().map(|b| InlineKeyboardButton::callback(b.label.clone(), b.action.clone()));
    let total: usize = buttons.iter().map(|b| b.label.chars().count()).sum();
    Ok(if total <= 30 {
        InlineKeyboardMarkup::new([keys.collect::<Vec<_>>()])
    } else {
        InlineKeyboardMarkup::new(keys.map(|k| vec![k]))
    })
}

/// What the outbox should do about a failed call.
pub(crate) fn classify(e: RequestError, token: &str) -> ChannelError {
    let text = |e: &dyn std::fmt::Display| crate::redact(&e.to_string(), token);
    match e {
        RequestError::RetryAfter(s) => ChannelError::RateLimited { retry_after: s.duration() },
        RequestError::Api(ApiError::MessageNotModified) => ChannelError::NotModified,
        RequestError::Api(
            e @ (ApiError::MessageToEditNotFound
            | ApiError::MessageCantBeEdited
            | ApiError::MessageIdInvalid
            | ApiError::ChatNotFound
            | ApiError::BotBlocked
            | ApiError::BotKicked
            | ApiError::BotKickedFromSupergroup
            | ApiError::UserDeactivated
            | ApiError::CantInitiateConversation
            | ApiError::GroupDeactivated),
        ) => ChannelError::NotFound(e.to_string()),
        RequestError::Api(ApiError::InvalidToken) => ChannelError::Unauthorized("the bot token was refused".into()),
        RequestError::Api(ApiError::Unknown(d)) => {
            let lower = d.to_ascii_lowercase();
            if lower.contains("message is not modified") {
                ChannelError::NotModified
            } else if lower.contains("too many requests") {
                ChannelError::RateLimited { retry_after: Duration::from_secs(1) }
            } else if ["internal server error", "bad gateway", "service unavailable", "gateway timeout"]
                .iter()
                .any(|s| lower.contains(s))
            {
                ChannelError::Transient(d)
            } else {
                ChannelError::Rejected(d)
            }
        }
        RequestError::Api(e) => ChannelError::Rejected(e.to_string()),
        RequestError::MigrateToChatId(id) => {
            ChannelError::NotFound(format!("the group became a supergroup; its new chat id is {id}"))
        }
        e @ (RequestError::Network(_) | RequestError::InvalidJson { .. } | RequestError::Io(_)) => {
            ChannelError::Transient(text(&e))
        }
    }
}

/// The link preview options of every message and edit: None (Telegram's default, previews
/// shown) when they are allowed, else disabled.
pub(crate) fn preview_options(allowed: bool) -> Option<LinkPreviewOptions> {
    (!allowed).then_some(LinkPreviewOptions {
        is_disabled: true,
        url: None,
        prefer_small_media: false,
        prefer_large_media: false,
        show_above_text: false,
    })
}

pub(crate) fn cant_parse(e: &RequestError) -> bool {
    matches!(e, RequestError::Api(ApiError::CantParseEntities(_)))
        || matches!(e, RequestError::Api(ApiError::Unknown(d)) if d.contains("can't parse entities"))
}

impl TelegramChannel {
    /// Runs `call` in a scheduler slot for `chat`, waiting out 429s (a draft hands them back).
    pub(crate) async fn scheduled<T, F, Fut>(&self, chat: ChatId, draft: bool, call: F) -> Result<T, RequestError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, RequestError>>,
    {
        let max_wait = if draft { DRAFT_MAX_WAIT } else { SEND_MAX_WAIT };
        let mut attempt = 0;
        loop {
            attempt += 1;
            if let Err(wait) = self.scheduler.wait(chat.0, max_wait).await {
                return Err(RequestError::RetryAfter(teloxide::types::Seconds::from_seconds(
                    wait.as_secs_f64().ceil() as u32,
                )));
            }
            match call().await {
                Err(RequestError::RetryAfter(s)) => {
                    self.scheduler.penalize(chat.0, s.duration()).await;
                    tracing::info!(chat = chat.0, retry_after = s.seconds(), draft, "Telegram asked to slow down");
                    if draft || attempt >= ATTEMPTS || s.duration() > max_wait {
                        return Err(RequestError::RetryAfter(s));
                    }
                }
                other => return other,
            }
        }
    }

    pub(crate) async fn send_message(&self, msg: &Outbound) -> Result<MessageRef, ChannelError> {
        if let Some(to) = &msg.private_to {
            if let Some(query) = &to.interaction {
                return self.answer_click(msg, query).await;
            }
            if msg.text.trim().is_empty() {
                return Ok(MessageRef { conversation: msg.conversation.clone(), id: "ack".into() });
            }
        }
        let chat = chat_of(&msg.conversation)?;
        let thread = thread_of(&msg.conversation);
        let markup = if msg.buttons.is_empty() { None } else { Some(keyboard(&msg.buttons)?) };
        let md = if msg.draft { clip_utf16(&msg.text, MAX_LEN - 2) } else { msg.text.as_str() };
        let reply = msg.reply_to.as_deref().and_then(|r| r.parse().ok()).map(MessageId);
        let send = |text: String, html: bool| {
            let mut req = self.bot.send_message(chat, text);
            if html {
                req = req.parse_mode(ParseMode::Html);
            }
            if let Some(o) = preview_options(self.settings.link_previews) {
                req = req.link_preview_options(o);
            }
            if let Some(t) = thread {
                req = req.message_thread_id(t);
            }
            if let Some(r) = reply {
                req = req.reply_parameters(ReplyParameters::new(r).allow_sending_without_reply());
            }
            if let Some(m) = markup.clone() {
                req = req.reply_markup(m);
            }
            req
        };
        let html = to_html(md);
        let sent = match self.scheduled(chat, msg.draft, || send(html.clone(), true).into_future()).await {
            Err(e) if cant_parse(&e) => {
                tracing::warn!(error = %crate::redact(&e.to_string(), &self.settings.token), "Telegram refused the rendered HTML; sending plain text");
                let text = plain(md);
                self.scheduled(chat, msg.draft, || send(text.clone(), false).into_future()).await
            }
            other => other,
        };
        let sent = sent.map_err(|e| classify(e, &self.settings.token))?;
        Ok(MessageRef { conversation: msg.conversation.clone(), id: sent.id.0.to_string() })
    }

    pub(crate) async fn edit_message(&self, target: &MessageRef, msg: &Outbound) -> Result<(), ChannelError> {
        let chat = chat_of(&target.conversation)?;
        let id = message_id(&target.id)?;
        let markup = keyboard(&msg.buttons)?;
        if msg.text.trim().is_empty() {
            let call = || self.bot.edit_message_reply_markup(chat, id).reply_markup(markup.clone()).into_future();
            return self
                .scheduled(chat, msg.draft, call)
                .await
                .map(|_| ())
                .map_err(|e| classify(e, &self.settings.token));
        }
        let md = if msg.draft { clip_utf16(&msg.text, MAX_LEN - 2) } else { msg.text.as_str() };
        let edit = |text: String, html: bool| {
            let mut req = self.bot.edit_message_text(chat, id, text);
            if html {
                req = req.parse_mode(ParseMode::Html);
            }
            if let Some(o) = preview_options(self.settings.link_previews) {
                req = req.link_preview_options(o);
            }
            // Without a reply_markup the keyboard goes away: a final text loses the Stop button.
            if !msg.buttons.is_empty() {
                req = req.reply_markup(markup.clone());
            }
            req
        };
        let html = to_html(md);
        let done = match self.scheduled(chat, msg.draft, || edit(html.clone(), true).into_future()).await {
            Err(e) if cant_parse(&e) => {
                tracing::warn!(error = %crate::redact(&e.to_string(), &self.settings.token), "Telegram refused the rendered HTML; editing in plain text");
                let text = plain(md);
                self.scheduled(chat, msg.draft, || edit(text.clone(), false).into_future()).await
            }
            other => other,
        };
        done.map(|_| ()).map_err(|e| classify(e, &self.settings.token))
    }

    /// The private answer to a click: a bare acknowledgement, or an alert only the clicker sees.
    /// Sent at once: it does not wait for the chat's message slot.
    async fn answer_click(&self, msg: &Outbound, query: &str) -> Result<MessageRef, ChannelError> {
        let mut req = self.bot.answer_callback_query(CallbackQueryId(query.to_string()));
        let text = plain(&msg.text);
        let text = text.trim();
        if !text.is_empty() {
            let short: String = if text.chars().count() > MAX_ALERT {
                text.chars().take(MAX_ALERT - 1).collect::<String>() + "…"
            } else {
                text.to_string()
            };
            req = req.text(short).show_alert(true);
        }
        match req.await {
            Ok(_) => {}
            Err(RequestError::Api(ApiError::InvalidQueryId)) => {
                tracing::info!(query, "the click is too old to answer; nothing more to do");
            }
            Err(e) => return Err(classify(e, &self.settings.token)),
        }
        Ok(MessageRef { conversation: msg.conversation.clone(), id: format!("callback:{query}") })
    }

    pub(crate) async fn send_typing(&self, conversation: &ConversationRef) -> Result<(), ChannelError> {
        if !self.scheduler.try_now().await {
            return Ok(()); // best effort: never spend a message slot on it
        }
        let mut req = self.bot.send_chat_action(chat_of(conversation)?, ChatAction::Typing);
        if let Some(t) = thread_of(conversation) {
            req = req.message_thread_id(t);
        }
        req.await.map(|_| ()).map_err(|e| classify(e, &self.settings.token))
    }
}
