//! `[channels]`: the built-in web chat (`[channels.web]`, typed in `mod.rs`) and every platform
//! channel's section as written (`[channels.<name>]`, a raw TOML table), plus what config asks
//! of the channel registry that sits above it ([`ChannelChecks`]) and the one way a channel
//! reads its section as its own type ([`ChannelsConfig::read`]), with problems naming the key.
//!
//! Plain data: this file must never name a platform or import a channel; each channel defines
//! its section type and its rules with its glue (`src/channels/<name>.rs`). It must never put
//! a secret into a message or a printout.

use super::error::{closest, sanitize, KeyPath, Seg};
use super::secret::{is_secret_name, MASK};
use super::{Problems, WebConfig};
use butler_channel::ConversationRef;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct ChannelsConfig {
    pub web: WebConfig,
    /// `[channels.<name>]` of each platform channel, as written (after `${VAR}` and overrides);
    /// the channel's registry entry reads it as its own type and checks it.
    #[serde(flatten)]
    pub platforms: BTreeMap<String, toml::Table>,
    /// The `BUTLER_CHANNELS__<NAME>__<KEY>` overrides that set keys of those sections, so a
    /// value read as a number or boolean can still be taken as the string the key wants.
    #[serde(skip)]
    pub overrides: Vec<SectionOverride>,
}

impl std::fmt::Debug for ChannelsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let vars: Vec<&str> = self.overrides.iter().map(|o| o.var.as_str()).collect();
        f.debug_struct("ChannelsConfig")
            .field("web", &self.web)
            .field("platforms", &self.masked().platforms)
            .field("overrides", &vars)
            .finish()
    }
}

/// One override inside a platform channel's section (no `Debug`: `raw` may be a secret).
#[derive(Clone, PartialEq, Eq)]
pub struct SectionOverride {
    /// The environment variable.
    pub var: String,
    /// The key path under `channels`, starting with the channel's name.
    pub path: Vec<String>,
    /// The variable's text.
    pub raw: String,
}

impl ChannelsConfig {
    /// Puts `section` in as `[channels.<name>]` (tests and set-up code that build a config).
    pub fn set(&mut self, name: &str, section: toml::Table) {
        self.platforms.insert(name.to_string(), section);
    }

    /// `[channels.<name>]` read as the channel's type `T`, or `None` with a problem per key
    /// that does not fit (unknown, missing, wrong type), each named `channels.<name>.<key>`.
    pub fn read<T: DeserializeOwned>(&self, name: &str, p: &mut Problems) -> Option<T> {
        let mut table = self.platforms.get(name)?.clone();
        let mut retried: Vec<Vec<String>> = Vec::new();
        loop {
            let err = match serde_path_to_error::deserialize::<_, T>(toml::Value::Table(table.clone())) {
                Ok(section) => return Some(section),
                Err(err) => err,
            };
            let path: Vec<String> =
                err.path()
                    .iter()
                    .filter_map(|s| match s {
                        serde_path_to_error::Segment::Map { key }
                        | serde_path_to_error::Segment::Enum { variant: key } => Some(key.clone()),
                        _ => None,
                    })
                    .collect();
            let message = err.inner().message().trim().to_string();
            let full: Vec<String> = std::iter::once(name.to_string()).chain(path.iter().cloned()).collect();
            let from_env = self.overrides.iter().find(|o| o.path == full && !retried.contains(&o.path));
            if let (Some(ov), true) = (from_env, message.starts_with("invalid type:") && message.ends_with("a string"))
            {
                if let Some(slot) = slot(&mut table, &path) {
                    *slot = toml::Value::String(ov.raw.clone());
                    retried.push(ov.path.clone());
                    continue;
                }
            }
            let key = |segs: &[String]| {
                let mut k = KeyPath(vec![Seg::Key("channels".into()), Seg::Key(name.into())]);
                for s in segs {
                    k = k.child(s);
                }
                k
            };
            if let Some(rest) = message.strip_prefix("unknown field `") {
                let (field, rest) = rest.split_once('`').unwrap_or((rest, ""));
                let expected: Vec<&str> = rest.split('`').skip(1).step_by(2).collect();
                let parent =
                    if path.last().map(String::as_str) == Some(field) { &path[..path.len() - 1] } else { &path[..] };
                let hint = closest(field, expected.iter().copied()).map_or(String::new(), |s| {
                    format!("; did you mean `{}`?", key(&[parent.to_vec(), vec![s.to_string()]].concat()))
                });
                let at = if path.last().map(String::as_str) == Some(field) {
                    key(&path)
                } else {
                    key(&[path.clone(), vec![field.to_string()]].concat())
                };
                p.add(at.to_string(), format!("is not a key of [channels.{name}]{hint}"));
            } else if let Some(field) = message.strip_prefix("missing field `").and_then(|r| r.split('`').next()) {
                let at = key(&[path.clone(), vec![field.to_string()]].concat());
                p.add(at.to_string(), "is missing; add it");
            } else {
                let at = key(&path);
                let by = self
                    .overrides
                    .iter()
                    .find(|o| o.path == full)
                    .map_or(String::new(), |o| format!(" (set by {})", o.var));
                p.add(at.to_string(), format!("bad value{by}: {}", sanitize(&message, &at)));
            }
            return None;
        }
    }

    /// A problem for each `[channels.<name>]` whose name is not in `known` (the web chat and
    /// every registered channel), naming the known ones and the closest.
    pub fn refuse_unknown(&self, known: &[&str], p: &mut Problems) {
        for name in self.platforms.keys().filter(|n| !known.contains(&n.as_str())) {
            let hint = closest(name, known.iter().copied()).map_or(String::new(), |s| format!("; did you mean `{s}`?"));
            let by = self
                .overrides
                .iter()
                .find(|o| o.path.first() == Some(name))
                .map_or(String::new(), |o| format!(" (set by {})", o.var));
            p.add(
                format!("channels.{name}"),
                format!("is not a channel Butler knows{by}{hint}; the channels are: {}", known.join(", ")),
            );
        }
    }

    /// These sections with every value under a secret-looking key masked, for printing.
    pub(super) fn masked(&self) -> Self {
        let mut out = self.clone();
        for table in out.platforms.values_mut() {
            mask_table(table);
        }
        out
    }
}

fn mask_table(table: &mut toml::Table) {
    for (key, value) in table.iter_mut() {
        match value {
            toml::Value::Table(t) => mask_table(t),
            v if is_secret_name(key) => *v = toml::Value::String(MASK.into()),
            _ => {}
        }
    }
}

fn slot<'a>(table: &'a mut toml::Table, path: &[String]) -> Option<&'a mut toml::Value> {
    let (first, rest) = path.split_first()?;
    let mut cur = table.get_mut(first)?;
    for k in rest {
        cur = cur.as_table_mut()?.get_mut(k)?;
    }
    Some(cur)
}

/// What config asks of the channel registry (`src/channels`, a layer above): the checks of the
/// platform channels' sections, and which channels a config runs. The caller hands it in
/// through [`super::OwnerChecks`].
pub trait ChannelChecks: Sync {
    /// Adds a problem per bad `[channels.<name>]`: an unknown name, a channel this build has
    /// without its Cargo feature, and each channel's own rules.
    fn check(&self, channels: &ChannelsConfig, p: &mut Problems);

    /// The channels this config runs (the web chat when enabled, each configured platform).
    fn running(&self, channels: &ChannelsConfig) -> Vec<String>;

    /// Why `conversation` (on a running channel) cannot be the target of a scheduled job, if
    /// its channel says so.
    fn refuse_target(&self, channels: &ChannelsConfig, conversation: &ConversationRef) -> Option<String>;
}

/// No registry: the platform sections are not checked and only the web chat runs
/// ([`super::OwnerChecks::NONE`]).
pub struct NoChannels;

impl ChannelChecks for NoChannels {
    fn check(&self, _: &ChannelsConfig, _: &mut Problems) {}

    fn running(&self, channels: &ChannelsConfig) -> Vec<String> {
        channels.web.enabled.then(|| "web".to_string()).into_iter().collect()
    }

    fn refuse_target(&self, _: &ChannelsConfig, _: &ConversationRef) -> Option<String> {
        None
    }
}
