//! The Slack Web API calls Butler makes, through slack-morphism's hyper client pointed at
//! `api_url` (Slack itself, or a test fake over plain HTTP), each behind the per-method
//! [`Limiter`] and with Slack's errors mapped to [`ChannelError`]s that tell the caller what to
//! do next (429 -> `RateLimited`, `message_not_found` -> `NotFound`, `invalid_auth` ->
//! `Unauthorized`, 5xx and network trouble -> `Transient`, the rest -> `Rejected`).
//!
//! Every message it posts or updates (chat.postMessage, chat.update, chat.postEphemeral) asks
//! Slack not to unfurl links or media unless previews are allowed ([`Api::link_previews`]): an
//! unfurl fetches the link at once, so a link with a secret in it would leak without a click.
//! slack-morphism's update and ephemeral requests have no unfurl fields, so those two are sent
//! wrapped in [`NoUnfurl`].
//!
//! This module must never log or return a token, and never retry by itself.

use crate::blocks::Rendered;
use crate::limit::Limiter;
use butler_channel::limit::Gate;
use butler_channel::ChannelError;
use hyper_rustls::ConfigBuilderExt;
use slack_morphism::errors::SlackClientError;
use slack_morphism::prelude::*;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

type Connector = SlackClientHyperConnector<SlackHyperHttpsConnector>;

/// What auth.test says about the bot token.
#[derive(Clone, Debug)]
pub struct AuthInfo {
    /// The bot's own user id (messages from it are Butler's own).
    pub user_id: String,
    pub bot_id: Option<String>,
    pub user: Option<String>,
    pub team: String,
    pub team_id: String,
}

pub struct Api {
    client: SlackClient<Connector>,
    bot: SlackApiToken,
    app: Option<SlackApiToken>,
    limiter: Limiter,
    tls: Arc<rustls::ClientConfig>,
    /// Let Slack unfurl what Butler posts (false: every post and update asks for no unfurls).
    previews: bool,
}

/// A request with Slack's unfurl switches added (both false), for the methods whose
/// slack-morphism request lacks them.
#[derive(serde::Serialize)]
struct NoUnfurl<'a, T: serde::Serialize> {
    #[serde(flatten)]
    request: &'a T,
    unfurl_links: bool,
    unfurl_media: bool,
}

impl<'a, T: serde::Serialize> NoUnfurl<'a, T> {
    fn new(request: &'a T) -> Self {
        Self { request, unfurl_links: false, unfurl_media: false }
    }
}

/// A TLS client config on the ring provider with the system's roots (empty when the system
/// has none: plain-HTTP test fakes still work, HTTPS then fails with a clear error).
fn tls_config() -> Arc<rustls::ClientConfig> {
    let builder = || {
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("ring supports the default TLS versions")
    };
    let config = builder().with_native_roots().map(|b| b.with_no_client_auth()).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "no system TLS roots found; HTTPS to Slack will fail (install ca-certificates)");
        builder().with_root_certificates(rustls::RootCertStore::empty()).with_no_client_auth()
    });
    Arc::new(config)
}

fn token(value: &str) -> SlackApiToken {
    SlackApiToken::new(SlackApiTokenValue(value.to_string()))
}

/// Maps a slack-morphism error; `RateLimited` also blocks the method in the limiter.
fn map_error(e: SlackClientError) -> ChannelError {
    match e {
        SlackClientError::RateLimitError(r) => {
            ChannelError::RateLimited { retry_after: r.retry_after.unwrap_or(Duration::from_secs(1)) }
        }
        SlackClientError::ApiError(a) => match a.code.as_str() {
            "ratelimited" | "rate_limited" => ChannelError::RateLimited { retry_after: Duration::from_secs(1) },
            "message_not_found" | "channel_not_found" | "thread_not_found" | "is_archived" | "not_in_channel"
            | "file_not_found" | "file_deleted" => ChannelError::NotFound(a.code),
            "invalid_auth"
            | "not_authed"
            | "account_inactive"
            | "token_revoked"
            | "token_expired"
            | "no_permission"
            | "missing_scope"
            | "not_allowed_token_type" => ChannelError::Unauthorized(a.code),
            "internal_error" | "fatal_error" | "service_unavailable" | "request_timeout" => {
                ChannelError::Transient(a.code)
            }
            _ => ChannelError::Rejected(a.code),
        },
        SlackClientError::HttpError(h) => {
            let status = h.status_code.as_u16();
            match status {
                401 | 403 => ChannelError::Unauthorized(format!("HTTP {status}")),
                404 => ChannelError::NotFound(format!("HTTP {status} (is api_url right?)")),
                s if s >= 500 || s == 408 => ChannelError::Transient(format!("HTTP {status}")),
                _ => ChannelError::Rejected(format!("HTTP {status}")),
            }
        }
        other => ChannelError::Transient(transport_failure(&other)),
    }
}

/// A failure below Slack's API (connecting, reading the answer) as a sentence: the innermost
/// cause ("Connection refused (os error 111)"), never slack-morphism's Debug dump of it.
fn transport_failure(e: &SlackClientError) -> String {
    let cause: Option<&(dyn std::error::Error + 'static)> = match e {
        SlackClientError::HttpProtocolError(p) => p.cause.as_deref().map(|c| c as _),
        SlackClientError::SystemError(s) => s.cause.as_deref().map(|c| c as _),
        _ => None,
    };
    if let Some(mut root) = cause {
        while let Some(next) = root.source() {
            root = next;
        }
        return format!("the request did not get through: {root}");
    }
    match e {
        SlackClientError::SystemError(s) => s.message.clone().unwrap_or_else(|| "the request failed".into()),
        SlackClientError::ProtocolError(p) => format!("Slack's answer was not the JSON expected: {}", p.json_error),
        SlackClientError::EndOfStream(_) => "the connection closed before Slack answered".into(),
        other => other.to_string(),
    }
}

impl Api {
    pub fn new(api_url: &str, bot_token: &str, app_token: Option<&str>, gate: Gate) -> Self {
        let tls = tls_config();
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config((*tls).clone())
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .build();
        let connector =
            SlackClientHyperConnector::with_connector(https).with_slack_api_url(api_url.trim_end_matches('/'));
        Self {
            client: SlackClient::new(connector),
            bot: token(bot_token),
            app: app_token.map(token),
            limiter: Limiter::new(gate),
            tls,
            previews: false,
        }
    }

    /// Lets Slack unfurl links and media in what Butler posts (off unless called with true).
    pub fn link_previews(mut self, allowed: bool) -> Self {
        self.previews = allowed;
        self
    }

    /// POSTs `req` to `method` as slack-morphism would, with the unfurl switches off unless
    /// previews are allowed.
    async fn post_unfurled<RQ, RS>(&self, method: &'static str, req: &RQ) -> Result<RS, ChannelError>
    where
        RQ: serde::Serialize + Send + Sync,
        RS: for<'de> serde::Deserialize<'de> + Send,
    {
        let session = self.bot();
        let tier = Some(&*SLACK_TIER3_METHOD_CONFIG);
        if self.previews {
            self.call(method, session.http_session_api.http_post(method, req, tier)).await
        } else {
            self.call(method, session.http_session_api.http_post(method, &NoUnfurl::new(req), tier)).await
        }
    }

    /// The TLS config for the Socket Mode websocket.
    pub fn tls(&self) -> Arc<rustls::ClientConfig> {
        self.tls.clone()
    }

    async fn call<T>(
        &self,
        method: &'static str,
        fut: impl Future<Output = Result<T, SlackClientError>>,
    ) -> Result<T, ChannelError> {
        self.limiter.check(method).await?;
        let err = match fut.await {
            Ok(v) => return Ok(v),
            Err(e) => map_error(e),
        };
        match &err {
            ChannelError::RateLimited { retry_after } => {
                tracing::info!(method, ?retry_after, "Slack rate limit; holding this method");
                self.limiter.block(method, *retry_after).await;
            }
            e => tracing::debug!(method, error = %e, "Slack call failed"),
        }
        Err(err)
    }

    fn bot(&self) -> SlackClientSession<'_, Connector> {
        self.client.open_session(&self.bot)
    }

    pub async fn auth_test(&self) -> Result<AuthInfo, ChannelError> {
        let r = self.call("auth.test", self.bot().auth_test()).await?;
        Ok(AuthInfo {
            user_id: r.user_id.0,
            bot_id: r.bot_id.map(|b| b.0),
            user: r.user,
            team: r.team,
            team_id: r.team_id.0,
        })
    }

    /// Posts a message; returns the channel id Slack used and the message's ts.
    pub async fn post_message(
        &self,
        channel: &str,
        thread_ts: Option<&str>,
        msg: Rendered,
    ) -> Result<(String, String), ChannelError> {
        let content = SlackMessageContent::new().with_text(msg.text).with_blocks(msg.blocks);
        let off = (!self.previews).then_some(false);
        let req = SlackApiChatPostMessageRequest::new(channel.into(), content)
            .opt_thread_ts(thread_ts.map(Into::into))
            .opt_unfurl_links(off)
            .opt_unfurl_media(off);
        let r = self.call("chat.postMessage", self.bot().chat_post_message(&req)).await?;
        Ok((r.channel.0, r.ts.0))
    }

    pub async fn update(&self, channel: &str, ts: &str, msg: Rendered) -> Result<(), ChannelError> {
        let content = SlackMessageContent::new().with_text(msg.text).with_blocks(msg.blocks);
        let req = SlackApiChatUpdateRequest::new(channel.into(), content, ts.into());
        self.post_unfurled::<_, SlackApiChatUpdateResponse>("chat.update", &req).await.map(|_| ())
    }

    pub async fn post_ephemeral(
        &self,
        channel: &str,
        user: &str,
        thread_ts: Option<&str>,
        msg: Rendered,
    ) -> Result<(), ChannelError> {
        let content = SlackMessageContent::new().with_text(msg.text).with_blocks(msg.blocks);
        let req = SlackApiChatPostEphemeralRequest::new(channel.into(), user.into(), content)
            .opt_thread_ts(thread_ts.map(Into::into));
        self.post_unfurled::<_, SlackApiChatPostEphemeralResponse>("chat.postEphemeral", &req).await.map(|_| ())
    }

    pub async fn reaction(&self, add: bool, channel: &str, ts: &str, name: &str) -> Result<(), ChannelError> {
        if add {
            let req = SlackApiReactionsAddRequest::new(channel.into(), name.into(), ts.into());
            self.call("reactions.add", self.bot().reactions_add(&req)).await.map(|_| ())
        } else {
            let req =
                SlackApiReactionsRemoveRequest::new(name.into()).with_channel(channel.into()).with_timestamp(ts.into());
            self.call("reactions.remove", self.bot().reactions_remove(&req)).await.map(|_| ())
        }
    }

    /// The name to show for a user: display name, else real name, else user name.
    pub async fn user_name(&self, user: &str) -> Result<Option<String>, ChannelError> {
        let req = SlackApiUsersInfoRequest::new(user.into());
        let r = self.call("users.info", self.bot().users_info(&req)).await?;
        let profile = r.user.profile.as_ref();
        let pick = |s: Option<&String>| s.filter(|s| !s.trim().is_empty()).cloned();
        Ok(pick(profile.and_then(|p| p.display_name.as_ref()))
            .or_else(|| pick(profile.and_then(|p| p.real_name.as_ref())))
            .or_else(|| pick(r.user.real_name.as_ref()))
            .or_else(|| pick(r.user.name.as_ref())))
    }

    /// The id of the public or private channel called `name` (without `#`), paging through
    /// conversations.list.
    pub async fn find_channel(&self, name: &str) -> Result<Option<String>, ChannelError> {
        let mut cursor: Option<SlackCursorId> = None;
        for _ in 0..50 {
            let req = SlackApiConversationsListRequest::new()
                .with_limit(200)
                .with_exclude_archived(true)
                .with_types(vec![SlackConversationType::Public, SlackConversationType::Private])
                .opt_cursor(cursor.take());
            let r = self.call("conversations.list", self.bot().conversations_list(&req)).await?;
            if let Some(c) = r.channels.iter().find(|c| c.name.as_deref() == Some(name)) {
                return Ok(Some(c.id.0.clone()));
            }
            match r.response_metadata.and_then(|m| m.next_cursor).filter(|c| !c.0.is_empty()) {
                Some(next) => cursor = Some(next),
                None => return Ok(None),
            }
        }
        Ok(None)
    }

    /// Where files.info says file `id` can be downloaded (`url_private_download`, else
    /// `url_private`), if anywhere.
    pub async fn file_url(&self, id: &str) -> Result<Option<String>, ChannelError> {
        let req = SlackApiFilesInfoRequest::new(id.into());
        let r = self.call("files.info", self.bot().files_info(&req)).await?;
        Ok(r.file.url_private_download.or(r.file.url_private).map(|u| u.to_string()))
    }

    /// files.getUploadURLExternal: where to POST a file of `length` bytes, and its new id.
    pub async fn upload_url(&self, filename: &str, length: u64) -> Result<(String, String), ChannelError> {
        let length = usize::try_from(length).map_err(|_| ChannelError::Rejected("the file is too large".into()))?;
        let req = SlackApiFilesGetUploadUrlExternalRequest::new(filename.to_string(), length);
        let r = self.call("files.getUploadURLExternal", self.bot().get_upload_url_external(&req)).await?;
        Ok((r.upload_url.0.to_string(), r.file_id.0))
    }

    /// files.completeUploadExternal: shares the uploaded file `id` in `channel` (in the thread
    /// `thread_ts`), with `comment` (mrkdwn) as the message text; returns the file's id.
    pub async fn complete_upload(
        &self,
        id: &str,
        title: &str,
        channel: &str,
        thread_ts: Option<&str>,
        comment: Option<String>,
    ) -> Result<String, ChannelError> {
        let file = SlackApiFilesComplete::new(id.into()).with_title(title.to_string());
        let req = SlackApiFilesCompleteUploadExternalRequest::new(vec![file])
            .with_channel_id(channel.into())
            .opt_thread_ts(thread_ts.map(Into::into))
            .opt_initial_comment(comment);
        let r = self.call("files.completeUploadExternal", self.bot().files_complete_upload_external(&req)).await?;
        Ok(r.files.into_iter().next().map_or_else(|| id.to_string(), |f| f.id.0))
    }

    /// A Socket Mode websocket URL (apps.connections.open with the app-level token).
    pub async fn open_socket(&self) -> Result<String, ChannelError> {
        let app = self.app.as_ref().ok_or_else(|| ChannelError::Rejected("no app_token for Socket Mode".into()))?;
        let session = self.client.open_session(app);
        let r = self
            .call("apps.connections.open", session.apps_connections_open(&SlackApiAppsConnectionOpenRequest::new()))
            .await?;
        Ok(r.url.0.to_string())
    }
}
