//! `[channels.whatsapp]` -> the WhatsApp channel (channels/whatsapp, Meta's WhatsApp Business
//! Cloud API): the section's type and checks, its `butler init` section, its settings, its
//! webhook routes (`GET`/`POST /channels/whatsapp/webhook`), its file source (the Graph API's
//! media URLs, under "whatsapp" in `Built.files`), and the `butler doctor` check (the token and
//! the phone number id through the Graph API).
//!
//! It must never hold WhatsApp logic or print a secret: mapping config to settings is all it does.

use super::built::{BuildError, Built, Check};
use super::registry::{Context, Platform};
use crate::config::{Problems, Secret};
use butler_channel::limit::Gate;
use butler_channel::ConversationRef;
use butler_whatsapp::{ConnectError, Settings, Template, WhatsAppChannel};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WhatsAppConfig {
    /// A system user's access token with `whatsapp_business_messaging`.
    pub access_token: Secret,
    /// The business phone number's id (WhatsApp Manager -> API Setup), not the number.
    pub phone_number_id: String,
    /// The Meta app's secret (App settings -> Basic): every webhook delivery is signed with it.
    pub app_secret: Secret,
    /// Any string; typed into the app dashboard's webhook form too.
    pub verify_token: Secret,
    /// The Graph API base with its version (or a test fake).
    #[serde(default = "whatsapp_api")]
    pub api_url: String,
    /// An approved template with one body parameter: what a message to someone outside the
    /// 24-hour window is sent as (the text as its parameter). Without one it is held until they
    /// write again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub briefing_template: Option<String>,
    /// The template's language code.
    #[serde(default = "template_language")]
    pub template_language: String,
}

fn template_language() -> String {
    "en_US".into()
}

fn whatsapp_api() -> String {
    "https://graph.facebook.com/v23.0".into()
}

impl WhatsAppConfig {
    /// This section as a `[channels.whatsapp]` table, secrets included.
    pub fn to_table(&self) -> toml::Table {
        let secrets = [
            ("access_token", Some(&self.access_token)),
            ("app_secret", Some(&self.app_secret)),
            ("verify_token", Some(&self.verify_token)),
        ];
        super::built::section_table(self, &secrets)
    }
}

/// The WhatsApp channel's registry entry.
pub struct WhatsApp;

fn settings(cfg: &WhatsAppConfig, gate: &Gate) -> Settings {
    Settings {
        access_token: cfg.access_token.expose().to_string(),
        phone_number_id: cfg.phone_number_id.trim().to_string(),
        app_secret: cfg.app_secret.expose().to_string(),
        verify_token: cfg.verify_token.expose().to_string(),
        api_url: cfg.api_url.clone(),
        template: cfg
            .briefing_template
            .as_ref()
            .map(|name| Template { name: name.trim().to_string(), language: cfg.template_language.trim().to_string() }),
        gate: gate.clone(),
    }
}

/// What is wrong and what to do about it, for start-up errors and `butler doctor`.
fn explain(e: &ConnectError, cfg: &WhatsAppConfig) -> (String, String) {
    let fix = match e {
        ConnectError::BadToken(_) => "check [channels.whatsapp] access_token: a system user's token with the \
                                      whatsapp_business_messaging permission (temporary tokens expire after a day)"
            .to_string(),
        ConnectError::BadPhoneNumber { .. } => {
            "check [channels.whatsapp] phone_number_id in WhatsApp Manager -> API Setup (the id, not the number)"
                .to_string()
        }
        ConnectError::Unreachable { .. } | ConnectError::BadUrl(_) => {
            format!("check [channels.whatsapp] api_url ({}) and that this machine can reach it", cfg.api_url)
        }
        ConnectError::Other(_) => "see the Graph API's answer above; check [channels.whatsapp]".to_string(),
    };
    (e.to_string(), fix)
}

#[async_trait::async_trait]
impl Platform for WhatsApp {
    const NAME: &'static str = "whatsapp";
    const INIT: &'static str =
        "# WhatsApp (Business Cloud API): uncomment with your Meta app's values (README, WhatsApp).\n\
                                # [channels.whatsapp]\n# access_token = \"${WHATSAPP_ACCESS_TOKEN}\"\n\
                                # phone_number_id = \"\"\n# app_secret = \"${WHATSAPP_APP_SECRET}\"\n\
                                # verify_token = \"${WHATSAPP_VERIFY_TOKEN}\"\n\n";
    type Section = WhatsAppConfig;

    /// `[channels.whatsapp]`: a token, a numeric phone number id, an app secret, a verify token
    /// and an http(s) Graph API URL.
    fn check(&self, w: &WhatsAppConfig, p: &mut Problems) {
        if w.access_token.expose().trim().is_empty() {
            p.add(
                "channels.whatsapp.access_token",
                "is empty; create a system user in Meta Business Settings and generate a token with \
                 whatsapp_business_messaging",
            );
        }
        let id = w.phone_number_id.trim();
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
            p.add(
                "channels.whatsapp.phone_number_id",
                "must be the phone number's id (digits) from WhatsApp Manager -> API Setup, not the number",
            );
        }
        if w.app_secret.expose().trim().is_empty() {
            p.add(
                "channels.whatsapp.app_secret",
                "is empty; copy the app secret from your Meta app (App settings -> Basic): webhook deliveries are \
                 signed with it",
            );
        }
        if w.verify_token.expose().trim().is_empty() {
            p.add(
                "channels.whatsapp.verify_token",
                "is empty; choose a random string (e.g. `openssl rand -hex 16`) and type the same into the app's \
                 webhook form",
            );
        }
        crate::config::http_url(p, "channels.whatsapp.api_url", &w.api_url);
        let name_ok =
            |n: &str| !n.is_empty() && n.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if w.briefing_template.as_deref().is_some_and(|n| !name_ok(n.trim())) {
            p.add(
                "channels.whatsapp.briefing_template",
                "must be a template's name as approved in WhatsApp Manager: lowercase letters, digits and `_`",
            );
        }
        let lang = w.template_language.trim();
        if lang.is_empty() || lang.len() > 10 || !lang.chars().all(|c| c.is_ascii_alphabetic() || c == '_') {
            p.add("channels.whatsapp.template_language", "must be a language code such as en_US or de");
        }
    }

    /// People are reached by their WhatsApp id (the phone number in digits); there are no groups
    /// or threads in the Cloud API.
    fn refuse_target(&self, _: &WhatsAppConfig, conversation: &ConversationRef) -> Option<String> {
        let digits = !conversation.id.is_empty() && conversation.id.chars().all(|c| c.is_ascii_digit());
        if !digits || conversation.thread.is_some() {
            return Some(format!(
                "`{conversation}`: a WhatsApp target is whatsapp:<number> in international format, digits only \
                 (e.g. whatsapp:16505551234); there are no groups or threads"
            ));
        }
        None
    }

    async fn build(&self, cfg: WhatsAppConfig, cx: &Context<'_>, built: &mut Built) -> Result<(), BuildError> {
        let channel = WhatsAppChannel::new(settings(&cfg, cx.gate)).map_err(|e| {
            let (problem, fix) = explain(&e, &cfg);
            BuildError { channel: "whatsapp", message: format!("{problem}; {fix} (`butler doctor` checks it)") }
        })?;
        let routes = butler_whatsapp::webhook_routes(channel.clone(), cx.ingress.clone(), cx.gate.clone());
        built.routes = std::mem::take(&mut built.routes).merge(routes);
        built.files.insert(butler_whatsapp::CHANNEL.to_string(), channel.files());
        built.channels.push(channel);
        Ok(())
    }

    async fn doctor(&self, cfg: &WhatsAppConfig) -> Check {
        let what = "whatsapp".to_string();
        match butler_whatsapp::check(&settings(cfg, &Gate::local())).await {
            Ok(n) => (
                what,
                Ok(format!(
                    "phone number {} ({}) accepted the token; webhook at /channels/whatsapp/webhook",
                    n.display_phone_number, n.verified_name
                )),
            ),
            Err(e) => (what, Err(explain(&e, cfg))),
        }
    }
}

#[cfg(test)]
mod check_tests {
    use super::WhatsAppConfig;
    use crate::config::{Config, ConfigError, Secret};

    fn keys(w: &WhatsAppConfig) -> Vec<String> {
        let mut c = Config::default();
        c.channels.set("whatsapp", w.to_table());
        match crate::app::check_config(&c) {
            Ok(()) => vec![],
            Err(ConfigError::Invalid { problems, .. }) => problems.into_iter().map(|p| p.key).collect(),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn whatsapp_settings_are_checked() {
        let good = WhatsAppConfig {
            access_token: Secret::new("EAAG-token"),
            phone_number_id: "106540352242922".into(),
            app_secret: Secret::new("app-secret"),
            verify_token: Secret::new("verify"),
            api_url: "https://graph.facebook.com/v23.0".into(),
            briefing_template: Some("daily_briefing".into()),
            template_language: "en_US".into(),
        };
        let cases: Vec<(WhatsAppConfig, Vec<&str>)> = vec![
            (good.clone(), vec![]),
            (
                WhatsAppConfig { access_token: Secret::new(" "), phone_number_id: "+1 650".into(), ..good.clone() },
                vec!["channels.whatsapp.access_token", "channels.whatsapp.phone_number_id"],
            ),
            (
                WhatsAppConfig {
                    app_secret: Secret::new(""),
                    verify_token: Secret::new(""),
                    api_url: "ftp://x".into(),
                    ..good.clone()
                },
                vec!["channels.whatsapp.app_secret", "channels.whatsapp.verify_token", "channels.whatsapp.api_url"],
            ),
            (
                WhatsAppConfig {
                    briefing_template: Some("Daily Briefing".into()),
                    template_language: "".into(),
                    ..good.clone()
                },
                vec!["channels.whatsapp.briefing_template", "channels.whatsapp.template_language"],
            ),
        ];
        for (cfg, want) in cases {
            assert_eq!(keys(&cfg), want, "{cfg:?}");
        }
    }

    #[test]
    fn schedule_targets_are_numbers() {
        use crate::channels::Platform;
        let good: WhatsAppConfig =
            toml::from_str("access_token = \"t\"\nphone_number_id = \"1\"\napp_secret = \"s\"\nverify_token = \"v\"")
                .unwrap();
        assert_eq!(good.api_url, "https://graph.facebook.com/v23.0");
        let cases = [("whatsapp:16505551234", true), ("whatsapp:+1650", false), ("whatsapp:1/2", false)];
        for (target, ok) in cases {
            let c: butler_channel::ConversationRef = target.parse().unwrap();
            assert_eq!(super::WhatsApp.refuse_target(&good, &c).is_none(), ok, "{target}");
        }
    }
}
