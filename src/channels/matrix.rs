//! `[channels.matrix]` -> the Matrix channel (channels/matrix, matrix-sdk with end-to-end
//! encryption): the section's type and checks, its `butler init` section, its settings (the
//! store under Butler's data folder unless `store_path` says otherwise), its file source (the
//! media repository, under "matrix" in `Built.files`), which schedule targets it takes
//! (`matrix:<room id>`), and the `butler doctor` check (the homeserver's versions and the
//! login).
//!
//! It must never hold Matrix logic or print a secret: mapping config to settings is all it does.

use super::built::{BuildError, Built, Check};
use super::registry::{Context, Platform};
use crate::config::{Problems, Secret};
use butler_channel::ConversationRef;
use butler_matrix::normalize::{valid_room, valid_user};
use butler_matrix::{ConnectError, Login, MatrixChannel, Settings};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixConfig {
    /// The homeserver's client-server URL (`https://matrix.example.org`).
    pub homeserver: String,
    /// Butler's Matrix user (`@butler:example.org`).
    pub user_id: String,
    #[serde(default = "empty")]
    pub password: Secret,
    /// Instead of a password: a token made for Butler's device (with `device_id`).
    #[serde(default = "empty")]
    pub access_token: Secret,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_id: Option<String>,
    /// Where the SDK keeps its state and encryption keys (default: `<data dir>/matrix`). One
    /// folder per process: replicas each have their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_path: Option<String>,
    /// Whose invites Butler accepts: user ids, or `:server` for everyone on a homeserver (they
    /// still need `[access]` like on any channel).
    pub allowed: Vec<String>,
}

fn empty() -> Secret {
    Secret::new("")
}

impl MatrixConfig {
    /// This section as a `[channels.matrix]` table, the secrets included.
    pub fn to_table(&self) -> toml::Table {
        let mut table = super::built::section_table(self, &[]);
        table.insert("password".into(), toml::Value::String(self.password.expose().to_string()));
        table.insert("access_token".into(), toml::Value::String(self.access_token.expose().to_string()));
        table
    }
}

/// The Matrix channel's registry entry.
pub struct Matrix;

fn settings(cfg: &MatrixConfig) -> Settings {
    let login = if cfg.access_token.expose().is_empty() {
        Login::Password(cfg.password.expose().to_string())
    } else {
        Login::AccessToken(cfg.access_token.expose().to_string())
    };
    let store_path = match cfg.store_path.as_deref().map(str::trim).filter(|p| !p.is_empty()) {
        Some(path) => PathBuf::from(path),
        None => crate::config::data_dir(&crate::config::Env::process()).join("matrix"),
    };
    Settings {
        homeserver: cfg.homeserver.trim().trim_end_matches('/').to_string(),
        user_id: cfg.user_id.trim().to_string(),
        login,
        device_id: cfg.device_id.clone().filter(|d| !d.trim().is_empty()),
        store_path,
        allowed: cfg.allowed.iter().map(|a| a.trim().to_string()).collect(),
    }
}

fn explain(e: &ConnectError) -> (String, String) {
    let fix = match e {
        ConnectError::BadUrl(_) | ConnectError::Unreachable { .. } | ConnectError::Other(_) => {
            "check [channels.matrix] homeserver and that this machine can reach it".to_string()
        }
        ConnectError::Refused { .. } => {
            "check [channels.matrix] user_id and password (or access_token with its device_id)".to_string()
        }
        ConnectError::StoreMismatch { path, .. } => format!(
            "the store in {path} is another account's or device's: set [channels.matrix] store_path to a new folder \
             (or move that one away; Butler then logs in as a new device)"
        ),
        ConnectError::Store { path, .. } => format!("check that {path} is a folder Butler can write"),
        ConnectError::InUse { .. } => {
            "give each Butler process (each replica) its own [channels.matrix] store_path".to_string()
        }
    };
    (e.to_string(), fix)
}

#[async_trait::async_trait]
impl Platform for Matrix {
    const NAME: &'static str = "matrix";
    const INIT: &'static str = "# Matrix (end-to-end encrypted): uncomment with Butler's account (README, Matrix).\n\
                                # [channels.matrix]\n# homeserver = \"https://matrix.example.org\"\n\
                                # user_id = \"@butler:example.org\"\n# password = \"${MATRIX_PASSWORD}\"\n\
                                # allowed = [\"@you:example.org\"]\n\n";
    type Section = MatrixConfig;

    fn check(&self, m: &MatrixConfig, p: &mut Problems) {
        crate::config::http_url(p, "channels.matrix.homeserver", &m.homeserver);
        if !valid_user(m.user_id.trim()) {
            p.add("channels.matrix.user_id", "must be Butler's Matrix user id, e.g. @butler:example.org");
        }
        let (password, token) = (!m.password.expose().is_empty(), !m.access_token.expose().is_empty());
        match (password, token) {
            (false, false) => p.add("channels.matrix.password", "is empty: set it (or access_token with device_id)"),
            (true, true) => {
                p.add("channels.matrix.access_token", "and password are both set: keep one (the token needs device_id)")
            }
            (false, true) if m.device_id.as_deref().is_none_or(|d| d.trim().is_empty()) => {
                p.add("channels.matrix.device_id", "is needed with access_token: the device the token was made for")
            }
            _ => {}
        }
        if m.allowed.is_empty() {
            p.add("channels.matrix.allowed", "is empty: list who may invite Butler (@you:example.org or :example.org)");
        }
        for (i, a) in m.allowed.iter().enumerate() {
            let a = a.trim();
            let server = a.strip_prefix(':').is_some_and(|s| !s.is_empty() && !s.contains(['@', ' ', '/']));
            if !valid_user(a) && !server {
                p.add(format!("channels.matrix.allowed[{i}]"), "must be a user id (@alice:example.org) or :server");
            }
        }
    }

    /// A room by id (`matrix:!abc:example.org`).
    fn refuse_target(&self, _: &MatrixConfig, conversation: &ConversationRef) -> Option<String> {
        (!valid_room(&conversation.id))
            .then(|| format!("`{conversation}`: a Matrix target is matrix:<room id>, e.g. matrix:!abc123:example.org"))
    }

    async fn build(&self, cfg: MatrixConfig, _cx: &Context<'_>, built: &mut Built) -> Result<(), BuildError> {
        let channel = MatrixChannel::new(settings(&cfg)).map_err(|e| {
            let (problem, fix) = explain(&e);
            BuildError { channel: "matrix", message: format!("{problem}; {fix} (`butler doctor` checks it)") }
        })?;
        // Every process logs in at start, so each replica's device is known to people's clients
        // before it reads or sends (they encrypt for the devices they know).
        channel.warm(std::time::Duration::from_secs(10)).await;
        built.files.insert(butler_matrix::CHANNEL.to_string(), channel.files());
        built.channels.push(channel);
        Ok(())
    }

    async fn doctor(&self, cfg: &MatrixConfig) -> Check {
        let what = "matrix".to_string();
        match butler_matrix::check(&settings(cfg)).await {
            Ok(found) => (what, Ok(format!("{}: {found}", cfg.homeserver))),
            Err(e) => (what, Err(explain(&e))),
        }
    }
}

#[cfg(test)]
mod check_tests {
    use super::*;
    use crate::config::{Config, ConfigError};

    fn keys(m: &MatrixConfig) -> Vec<String> {
        let mut c = Config::default();
        c.channels.set("matrix", m.to_table());
        match crate::app::check_config(&c) {
            Ok(()) => vec![],
            Err(ConfigError::Invalid { problems, .. }) => problems.into_iter().map(|p| p.key).collect(),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn matrix_settings_and_targets_are_checked() {
        let good = MatrixConfig {
            homeserver: "https://matrix.example.org".into(),
            user_id: "@butler:example.org".into(),
            password: Secret::new("pw"),
            access_token: Secret::new(""),
            device_id: None,
            store_path: None,
            allowed: vec!["@alice:example.org".into(), ":team.example".into()],
        };
        let token = MatrixConfig { password: Secret::new(""), access_token: Secret::new("syt_x"), ..good.clone() };
        let cases: Vec<(MatrixConfig, Vec<&str>)> = vec![
            (good.clone(), vec![]),
            (MatrixConfig { device_id: Some("BUTLER".into()), ..token.clone() }, vec![]),
            (token.clone(), vec!["channels.matrix.device_id"]),
            (MatrixConfig { password: Secret::new(""), ..good.clone() }, vec!["channels.matrix.password"]),
            (MatrixConfig { access_token: Secret::new("t"), ..good.clone() }, vec!["channels.matrix.access_token"]),
            (
                MatrixConfig { homeserver: "matrix.example.org".into(), user_id: "butler".into(), ..good.clone() },
                vec!["channels.matrix.homeserver", "channels.matrix.user_id"],
            ),
            (MatrixConfig { allowed: vec![], ..good.clone() }, vec!["channels.matrix.allowed"]),
            (MatrixConfig { allowed: vec!["alice".into()], ..good.clone() }, vec!["channels.matrix.allowed[0]"]),
        ];
        for (cfg, want) in cases {
            assert_eq!(keys(&cfg), want, "{cfg:?}");
        }
        use crate::channels::Platform;
        let targets = [("matrix:!abc:example.org", true), ("matrix:@alice:example.org", false), ("matrix:abc", false)];
        for (target, ok) in targets {
            let c: ConversationRef = target.parse().unwrap();
            assert_eq!(Matrix.refuse_target(&good, &c).is_none(), ok, "{target}");
        }
        let s = settings(&MatrixConfig { store_path: Some("/var/lib/butler/mx".into()), ..good });
        assert_eq!(s.store_path, PathBuf::from("/var/lib/butler/mx"));
        assert!(format!("{s:?}").contains("Password(…)"));
    }
}
