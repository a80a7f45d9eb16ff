//! The glue between Butler's config and the platform channel crates (`channels/*`): the
//! channel registry ([`Registry`], `registry.rs`) with one entry per platform, each defined in
//! its one glue file (`telegram.rs`, `slack.rs`, `discord.rs`, `whatsapp.rs`, `signal.rs`, `email.rs`, `matrix.rs`: its section type, checks, build,
//! `butler doctor` check and `init` section), and the webhook triggers' routes (`webhook.rs`).
//! This is the only module that names a channel crate, each behind the cargo feature of the
//! same name.
//!
//! It must never hold platform logic: mapping config to the crate's settings is all it does.

mod built;
#[cfg(feature = "discord")]
mod discord;
#[cfg(feature = "email")]
mod email;
#[cfg(feature = "matrix")]
mod matrix;
mod registry;
#[cfg(feature = "signal")]
mod signal;
#[cfg(feature = "slack")]
mod slack;
#[cfg(feature = "telegram")]
mod telegram;
mod webhook;
#[cfg(feature = "whatsapp")]
mod whatsapp;

pub use built::{section_table, BuildError, Built, Check};
#[cfg(feature = "discord")]
pub use discord::DiscordConfig;
#[cfg(feature = "email")]
pub use email::{AllowedSender, EmailConfig, MailProof, MailServer, MailTls};
#[cfg(feature = "matrix")]
pub use matrix::MatrixConfig;
pub use registry::{Context, Platform, Registry};
#[cfg(feature = "signal")]
pub use signal::SignalConfig;
#[cfg(feature = "slack")]
pub use slack::SlackConfig;
#[cfg(feature = "telegram")]
pub use telegram::{TelegramConfig, TelegramMode};
pub use webhook::{trigger_routes, TRIGGERS};
#[cfg(feature = "whatsapp")]
pub use whatsapp::WhatsAppConfig;

use crate::config::{ChannelChecks, ChannelsConfig, Problems};
use butler_channel::ConversationRef;

/// `registry.with(platform)` when this build has `feature`, else an entry that refuses the
/// channel's section naming the feature.
macro_rules! platform {
    ($registry:expr, $feature:literal => $platform:expr) => {{
        #[cfg(feature = $feature)]
        let registry = $registry.with($platform);
        #[cfg(not(feature = $feature))]
        let registry = $registry.without($feature);
        registry
    }};
}

/// Every platform channel of Butler, in the order they are checked, built and written by
/// `butler init`: one line per channel.
pub fn builtin() -> Registry {
    let r = Registry::default();
    let r = platform!(r, "telegram" => telegram::Telegram);
    let r = platform!(r, "slack" => slack::Slack);
    let r = platform!(r, "discord" => discord::DiscordPlatform);
    let r = platform!(r, "whatsapp" => whatsapp::WhatsApp);
    let r = platform!(r, "signal" => signal::Signal);
    let r = platform!(r, "email" => email::Email);
    platform!(r, "matrix" => matrix::Matrix)
}

/// The built-in registry as config's channel checks, for `app::CONFIG_CHECKS` (a constant).
pub struct BuiltIn;

impl ChannelChecks for BuiltIn {
    fn check(&self, channels: &ChannelsConfig, p: &mut Problems) {
        builtin().check(channels, p);
    }

    fn running(&self, channels: &ChannelsConfig) -> Vec<String> {
        builtin().running(channels)
    }

    fn refuse_target(&self, channels: &ChannelsConfig, conversation: &ConversationRef) -> Option<String> {
        builtin().refuse_target(channels, conversation)
    }
}

#[cfg(test)]
mod init_tests {
    use crate::config::{ChannelChecks, ChannelsConfig, Problems};

    /// Each channel's commented `butler init` section, uncommented, is its `[channels.<name>]`
    /// with keys the channel knows (values like `${VAR}` or an empty id are the person's to fill).
    #[test]
    fn init_sections_uncomment_to_known_keys() {
        // The check below does catch a key the channel does not know.
        let mut bad = ChannelsConfig::default();
        bad.set("signal", toml::from_str("account = \"+15551234567\"\nnumber = \"x\"").unwrap());
        let mut p = Problems::default();
        super::builtin().check(&bad, &mut p);
        assert!(p.into_lines().iter().any(|l| l.contains("is not a key")), "an unknown key is named");
        let sections = super::builtin().init_sections();
        assert!(sections.iter().any(|(n, _)| *n == "signal"), "{sections:?}");
        for (name, text) in sections {
            let uncommented: String = text
                .lines()
                .filter_map(|l| l.strip_prefix("# "))
                .filter(|l| l.starts_with('[') || l.contains(" = "))
                .map(|l| format!("{l}\n"))
                .collect();
            let doc: toml::Table =
                toml::from_str(&uncommented).unwrap_or_else(|e| panic!("{name}: {e}\n{uncommented}"));
            let table = doc["channels"][name].as_table().unwrap_or_else(|| panic!("{name}: no [channels.{name}]"));
            let mut channels = ChannelsConfig::default();
            channels.set(name, table.clone());
            let mut p = Problems::default();
            super::builtin().check(&channels, &mut p);
            for line in p.into_lines() {
                assert!(!line.contains("is not a key"), "{name}: {line}");
            }
        }
    }
}
