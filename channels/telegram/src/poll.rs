//! Receiving: registration at start (deleteWebhook or setWebhook, setMyCommands) and the
//! getUpdates long-poll loop.
//!
//! The offset sent to Telegram confirms every update below it, so it only ever moves past an
//! update after the ingress returned `Ok` for it (stored, or a known duplicate) or decided it is
//! not an event. If the ingress is unavailable the loop stops where it is and asks again: the
//! same updates come back. It must never confirm an update it has not handed over.

use crate::normalize::{event, repair, unreadable};
use crate::{Mode, TelegramChannel};
use butler_channel::{ChannelError, Ingress, IngressError};
use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Duration;
use teloxide::payloads::{GetUpdatesSetters, SetWebhookSetters};
use teloxide::requests::Requester;
use teloxide::types::{AllowedUpdate, BotCommand};
use teloxide::RequestError;
use tokio_util::sync::CancellationToken;

/// Updates asked for (the rest would only be acknowledged and dropped).
const ALLOWED: [AllowedUpdate; 3] =
    [AllowedUpdate::Message, AllowedUpdate::EditedMessage, AllowedUpdate::CallbackQuery];

impl TelegramChannel {
    pub(crate) async fn receive(
        &self,
        ingress: Arc<dyn Ingress>,
        cancel: CancellationToken,
    ) -> Result<(), ChannelError> {
        if !self.register(&cancel).await {
            return Ok(());
        }
        match self.settings.mode.clone() {
            Mode::Webhook { .. } => Ok(()),
            Mode::Polling { timeout } => {
                self.poll(&*ingress, timeout, &cancel).await;
                Ok(())
            }
        }
    }

    /// Tells Telegram how to deliver (and the command menu), retrying until it works or
    /// `cancel` fires; false when cancelled.
    async fn register(&self, cancel: &CancellationToken) -> bool {
        let mut backoff = Duration::from_millis(500);
        loop {
            match self.register_once().await {
                Ok(()) => return true,
                Err(e) => {
                    let wait = match &e {
                        RequestError::RetryAfter(s) => s.duration(),
                        _ => backoff,
                    };
                    tracing::warn!(error = %crate::redact(&e.to_string(), &self.settings.token), ?wait, "Telegram registration failed; retrying");
                    backoff = (backoff * 2).min(Duration::from_secs(30));
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = cancel.cancelled() => return false,
                    }
                }
            }
        }
    }

    async fn register_once(&self) -> Result<(), RequestError> {
        match &self.settings.mode {
            // Keeps pending updates: they are fetched by the first getUpdates.
            Mode::Polling { .. } => {
                self.bot.delete_webhook().await?;
            }
            Mode::Webhook { url, secret } => {
                let parsed = url.parse().map_err(|_| {
                    RequestError::Api(teloxide::ApiError::Unknown(format!("`{url}` is not a valid webhook URL")))
                })?;
                self.bot
                    .set_webhook(parsed)
                    .secret_token(secret.clone())
                    .allowed_updates(ALLOWED)
                    .into_future()
                    .await?;
            }
        }
        if !self.settings.commands.is_empty() {
            let commands = self.settings.commands.iter().map(|(c, d)| BotCommand::new(c.clone(), d.clone()));
            self.bot.set_my_commands(commands.collect::<Vec<_>>()).await?;
        }
        tracing::info!(bot = %self.me.username, mode = ?self.settings.mode, "Telegram channel registered");
        Ok(())
    }

    async fn poll(&self, ingress: &dyn Ingress, timeout: Duration, cancel: &CancellationToken) {
        let mut offset: Option<i32> = None;
        let mut backoff = Duration::from_millis(250);
        loop {
            let mut req = self.poller.get_updates().timeout(timeout.as_secs() as u32).allowed_updates(ALLOWED);
            if let Some(o) = offset {
                req = req.offset(o);
            }
            let result = tokio::select! {
                r = req.into_future() => r,
                _ = cancel.cancelled() => return,
            };
            let pause = match result {
                Ok(updates) => {
                    backoff = Duration::from_millis(250);
                    match self.hand_over(ingress, &updates, &mut offset).await {
                        Ok(()) => continue,
                        Err(e) => {
                            tracing::warn!(error = %e, "the ingress is unavailable; the updates will be fetched again");
                            Duration::from_secs(1)
                        }
                    }
                }
                Err(RequestError::RetryAfter(s)) => s.duration(),
                Err(e) => {
                    tracing::warn!(error = %crate::redact(&e.to_string(), &self.settings.token), ?backoff, "getUpdates failed; retrying");
                    backoff = (backoff * 2).min(Duration::from_secs(30));
                    backoff
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = cancel.cancelled() => return,
            }
        }
    }

    /// Hands each update to the ingress in order, moving `offset` past it once it is durable
    /// (or not an event). Stops at the first update the ingress could not store.
    async fn hand_over(
        &self,
        ingress: &dyn Ingress,
        updates: &[teloxide::types::Update],
        offset: &mut Option<i32>,
    ) -> Result<(), IngressError> {
        for update in updates {
            let repaired = match &update.kind {
                teloxide::types::UpdateKind::Error(raw) => match repair(raw) {
                    Some(fixed) => Some(fixed),
                    None => {
                        unreadable(update.id.0);
                        None
                    }
                },
                _ => None,
            };
            let update = repaired.as_ref().unwrap_or(update);
            if let Some(ev) = event(update, &self.me) {
                match ingress.accept(ev).await {
                    Ok(_) => {}
                    Err(IngressError::Invalid(why)) => {
                        tracing::warn!(update = update.id.0, why, "an update the ingress will never take; skipped");
                    }
                    Err(e) => return Err(e),
                }
            } else {
                tracing::debug!(update = update.id.0, "not an event (edit, service message, other update kind)");
            }
            // Telegram sends ids in increasing order; `max` keeps the offset from ever going back.
            *offset = Some(offset.unwrap_or(0).max(update.id.0 as i32 + 1));
        }
        Ok(())
    }
}
