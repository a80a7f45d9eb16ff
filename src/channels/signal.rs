//! `[channels.signal]` -> the Signal channel (channels/signal, signal-cli's HTTP daemon): the
//! section's type and checks, its `butler init` section, its settings, its file source (the
//! daemon's `getAttachment`, under "signal" in `Built.files`), which schedule targets it takes
//! (`signal:+<number>`, `signal:group:<id>`), and the `butler doctor` check (the daemon holds
//! the account and it is registered).
//!
//! It must never hold Signal logic: mapping config to settings is all it does.

use super::built::{BuildError, Built, Check};
use super::registry::{Context, Platform};
use crate::config::Problems;
use butler_channel::ConversationRef;
use butler_signal::{ConnectError, Settings, SignalChannel};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SignalConfig {
    /// signal-cli's daemon (`signal-cli -a +1555… daemon --http 127.0.0.1:8080`).
    #[serde(default = "signal_url")]
    pub url: String,
    /// The bot's number, in international format (`+15551234567`).
    pub account: String,
}

fn signal_url() -> String {
    "http://127.0.0.1:8080".into()
}

impl SignalConfig {
    /// This section as a `[channels.signal]` table (it holds no secret: the daemon does).
    pub fn to_table(&self) -> toml::Table {
        super::built::section_table(self, &[])
    }
}

/// The Signal channel's registry entry.
pub struct Signal;

fn settings(cfg: &SignalConfig) -> Settings {
    Settings { url: cfg.url.trim().to_string(), account: cfg.account.trim().to_string() }
}

/// What is wrong and what to do about it, for start-up errors and `butler doctor`.
fn explain(e: &ConnectError, cfg: &SignalConfig) -> (String, String) {
    let fix = match e {
        ConnectError::BadUrl(_) | ConnectError::Unreachable { .. } => format!(
            "start the daemon (`signal-cli -a {} daemon --http 127.0.0.1:8080 --receive-mode=manual`) and check \
             [channels.signal] url ({})",
            cfg.account, cfg.url
        ),
        ConnectError::UnknownAccount { .. } => format!(
            "register or link {} with signal-cli first (README, Signal), or fix [channels.signal] account",
            cfg.account
        ),
        ConnectError::Other(_) => "see the daemon's answer above; check [channels.signal]".to_string(),
    };
    (e.to_string(), fix)
}

#[async_trait::async_trait]
impl Platform for Signal {
    const NAME: &'static str = "signal";
    const INIT: &'static str =
        "# Signal (through signal-cli's daemon): uncomment with the bot's number (README, Signal).\n\
                                # [channels.signal]\n# url = \"http://127.0.0.1:8080\"\n\
                                # account = \"+15551234567\"\n\n";
    type Section = SignalConfig;

    /// `[channels.signal]`: an http(s) daemon URL and a number in international format.
    fn check(&self, s: &SignalConfig, p: &mut Problems) {
        crate::config::http_url(p, "channels.signal.url", &s.url);
        let account = s.account.trim();
        let digits = account.strip_prefix('+').unwrap_or_default();
        if !(6..=15).contains(&digits.len()) || !digits.chars().all(|c| c.is_ascii_digit()) {
            p.add(
                "channels.signal.account",
                "must be the bot's number in international format with a leading + (e.g. +15551234567)",
            );
        }
    }

    /// A person by number (or uuid), or a group by its id.
    fn refuse_target(&self, _: &SignalConfig, conversation: &ConversationRef) -> Option<String> {
        if butler_signal::normalize::valid_conversation(&conversation.id) && conversation.thread.is_none() {
            return None;
        }
        Some(format!(
            "`{conversation}`: a Signal target is signal:+<number> in international format (e.g. signal:+15551234567) \
             or signal:group:<id> (the group id as Butler logs it)"
        ))
    }

    async fn build(&self, cfg: SignalConfig, _cx: &Context<'_>, built: &mut Built) -> Result<(), BuildError> {
        let channel = SignalChannel::new(settings(&cfg)).map_err(|e| {
            let (problem, fix) = explain(&e, &cfg);
            BuildError { channel: "signal", message: format!("{problem}; {fix} (`butler doctor` checks it)") }
        })?;
        built.files.insert(butler_signal::CHANNEL.to_string(), channel.files());
        built.channels.push(channel);
        Ok(())
    }

    async fn doctor(&self, cfg: &SignalConfig) -> Check {
        let what = "signal".to_string();
        match butler_signal::check(&settings(cfg)).await {
            Ok(uuid) => (what, Ok(format!("the daemon at {} holds {} ({uuid})", cfg.url, cfg.account))),
            Err(e) => (what, Err(explain(&e, cfg))),
        }
    }
}

#[cfg(test)]
mod check_tests {
    use super::SignalConfig;
    use crate::config::{Config, ConfigError};

    fn keys(s: &SignalConfig) -> Vec<String> {
        let mut c = Config::default();
        c.channels.set("signal", s.to_table());
        match crate::app::check_config(&c) {
            Ok(()) => vec![],
            Err(ConfigError::Invalid { problems, .. }) => problems.into_iter().map(|p| p.key).collect(),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn signal_settings_and_targets_are_checked() {
        let good = SignalConfig { url: "http://127.0.0.1:8080".into(), account: "+15551234567".into() };
        let cases: Vec<(SignalConfig, Vec<&str>)> = vec![
            (good.clone(), vec![]),
            (SignalConfig { account: "15551234567".into(), ..good.clone() }, vec!["channels.signal.account"]),
            (
                SignalConfig { url: "unix:/run/signal".into(), account: "+1".into() },
                vec!["channels.signal.url", "channels.signal.account"],
            ),
        ];
        for (cfg, want) in cases {
            assert_eq!(keys(&cfg), want, "{cfg:?}");
        }
        use crate::channels::Platform;
        let defaulted: SignalConfig = toml::from_str("account = \"+15551234567\"").unwrap();
        assert_eq!(defaulted.url, "http://127.0.0.1:8080");
        let targets = [
            ("signal:+15551234567", true),
            ("signal:group:kC1z-aB_9xQ=", true),
            ("signal:15551234567", false),
            ("signal:group:!!", false),
        ];
        for (target, ok) in targets {
            let c: butler_channel::ConversationRef = target.parse().unwrap();
            assert_eq!(super::Signal.refuse_target(&good, &c).is_none(), ok, "{target}");
        }
    }
}
