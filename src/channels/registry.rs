//! The channel registry: every platform channel Butler can run, one entry each. A channel is a
//! [`Platform`] (its section type, its checks, which schedule targets it takes, its build from
//! config, its `butler doctor` check, its `init` section), written in its one glue file
//! (`src/channels/<name>.rs`) and registered with one line in `builtin()` (`mod.rs`) (or, for a
//! test channel, one [`Registry::with`] call). Config holds each `[channels.<name>]` as written;
//! the registry reads it as the channel's type, checks it (as config's [`ChannelChecks`]), and
//! builds it.
//!
//! It must never hold one platform's logic: it only dispatches to the entries.

use super::built::{BuildError, Built, Check};
use crate::config::{ChannelChecks, ChannelsConfig, Problems};
use async_trait::async_trait;
use butler_channel::limit::Gate;
use butler_channel::{ConversationRef, Ingress};
use serde::de::DeserializeOwned;
use std::sync::Arc;

/// What a channel is given to start: where its events go and where its rate limits live.
pub struct Context<'a> {
    pub ingress: Arc<dyn Ingress>,
    /// This process's rate gate, or the replicas' shared one.
    pub gate: &'a Gate,
    /// Answer links (`[server] public_url` set), for channels without buttons.
    pub links: Option<Arc<crate::links::Links>>,
}

/// One platform channel as Butler knows it, behind its `[channels.NAME]` section.
#[async_trait]
pub trait Platform: Send + Sync + 'static {
    /// The section's name and the channel name of its events (`telegram`).
    const NAME: &'static str;
    /// The commented section `butler init` writes for it, ending in a blank line ("" for none).
    const INIT: &'static str = "";
    /// `[channels.NAME]` as the channel reads it (serde, unknown keys refused).
    type Section: DeserializeOwned + Send + Sync;

    /// Adds a problem per bad value, each naming its key (`channels.NAME.key`), never a secret.
    fn check(&self, _section: &Self::Section, _p: &mut Problems) {}

    /// Why a scheduled job may not deliver to `conversation` on this channel (none: any).
    fn refuse_target(&self, _section: &Self::Section, _conversation: &ConversationRef) -> Option<String> {
        None
    }

    /// Starts the channel: puts its adapter, routes and file source into `built`.
    async fn build(&self, section: Self::Section, cx: &Context<'_>, built: &mut Built) -> Result<(), BuildError>;

    /// The `butler doctor` line: its credentials and reachability.
    async fn doctor(&self, section: &Self::Section) -> Check;
}

/// A registry entry: a [`Platform`] with its section type erased, or a channel this build has
/// without its Cargo feature.
#[async_trait]
trait Entry: Send + Sync {
    fn name(&self) -> &'static str;
    fn init(&self) -> &'static str;
    fn check(&self, channels: &ChannelsConfig, p: &mut Problems);
    fn refuse_target(&self, channels: &ChannelsConfig, conversation: &ConversationRef) -> Option<String>;
    async fn build(&self, channels: &ChannelsConfig, cx: &Context<'_>, built: &mut Built) -> Result<(), BuildError>;
    async fn doctor(&self, channels: &ChannelsConfig) -> Check;
}

struct Typed<P>(P);

impl<P: Platform> Typed<P> {
    /// The section read as `P::Section`, or the problems as one line.
    fn section(channels: &ChannelsConfig) -> Result<P::Section, String> {
        let mut p = Problems::default();
        match channels.read::<P::Section>(P::NAME, &mut p) {
            Some(s) => Ok(s),
            None => Err(p.into_lines().join("; ")),
        }
    }
}

#[async_trait]
impl<P: Platform> Entry for Typed<P> {
    fn name(&self) -> &'static str {
        P::NAME
    }

    fn init(&self) -> &'static str {
        P::INIT
    }

    fn check(&self, channels: &ChannelsConfig, p: &mut Problems) {
        if let Some(section) = channels.read::<P::Section>(P::NAME, p) {
            self.0.check(&section, p);
        }
    }

    fn refuse_target(&self, channels: &ChannelsConfig, conversation: &ConversationRef) -> Option<String> {
        Self::section(channels).ok().and_then(|s| self.0.refuse_target(&s, conversation))
    }

    async fn build(&self, channels: &ChannelsConfig, cx: &Context<'_>, built: &mut Built) -> Result<(), BuildError> {
        let section = Self::section(channels).map_err(|message| BuildError { channel: P::NAME, message })?;
        self.0.build(section, cx, built).await
    }

    async fn doctor(&self, channels: &ChannelsConfig) -> Check {
        match Self::section(channels) {
            Ok(section) => self.0.doctor(&section).await,
            Err(problems) => (P::NAME.into(), Err((problems, format!("fix [channels.{}]", P::NAME)))),
        }
    }
}

/// A channel Butler has, left out of this build (its Cargo feature is off).
struct Unbuilt {
    name: &'static str,
    feature: &'static str,
}

impl Unbuilt {
    fn why(&self) -> String {
        format!(
            "this butler was built without the `{}` Cargo feature, so it has no {} channel; rebuild with \
             `--features {}` (it is on by default), or remove the section",
            self.feature, self.name, self.feature
        )
    }
}

#[async_trait]
impl Entry for Unbuilt {
    fn name(&self) -> &'static str {
        self.name
    }

    fn init(&self) -> &'static str {
        ""
    }

    fn check(&self, _: &ChannelsConfig, p: &mut Problems) {
        p.add(format!("channels.{}", self.name), self.why());
    }

    fn refuse_target(&self, _: &ChannelsConfig, _: &ConversationRef) -> Option<String> {
        Some(self.why())
    }

    async fn build(&self, _: &ChannelsConfig, _: &Context<'_>, _: &mut Built) -> Result<(), BuildError> {
        Err(BuildError { channel: self.name, message: self.why() })
    }

    async fn doctor(&self, _: &ChannelsConfig) -> Check {
        (self.name.into(), Err((self.why(), format!("rebuild with `--features {}`", self.feature))))
    }
}

/// The platform channels this process knows, in the order they are checked, built and written
/// by `butler init`. Cheap to clone.
#[derive(Clone, Default)]
pub struct Registry {
    entries: Vec<Arc<dyn Entry>>,
}

impl Registry {
    /// This registry with `platform` added (replacing an entry of the same name).
    pub fn with<P: Platform>(mut self, platform: P) -> Self {
        self.entries.retain(|e| e.name() != P::NAME);
        self.entries.push(Arc::new(Typed(platform)));
        self
    }

    /// This registry with a channel whose Cargo feature (of the same name) is off in this
    /// build: its section is refused, naming the feature.
    pub fn without(mut self, feature: &'static str) -> Self {
        self.entries.push(Arc::new(Unbuilt { name: feature, feature }));
        self
    }

    /// The names `[channels.<name>]` may take: the web chat, then each entry.
    pub fn names(&self) -> Vec<&'static str> {
        std::iter::once(crate::ids::WEB_CHANNEL).chain(self.entries.iter().map(|e| e.name())).collect()
    }

    fn configured<'a>(&'a self, channels: &'a ChannelsConfig) -> impl Iterator<Item = &'a Arc<dyn Entry>> + 'a {
        self.entries.iter().filter(|e| channels.platforms.contains_key(e.name()))
    }

    /// Builds every configured platform channel. `http` is false for `butler chat`, which runs
    /// no server and no platform channels.
    pub async fn build(&self, channels: &ChannelsConfig, cx: &Context<'_>, http: bool) -> Result<Built, BuildError> {
        let mut built = Built::default();
        if !http {
            return Ok(built);
        }
        let mut problems = Problems::default();
        channels.refuse_unknown(&self.names(), &mut problems);
        if let Some(line) = problems.into_lines().into_iter().next() {
            return Err(BuildError { channel: "unknown", message: line });
        }
        for entry in self.configured(channels) {
            entry.build(channels, cx, &mut built).await?;
        }
        if let Some(links) = &cx.links {
            built.routes =
                std::mem::take(&mut built.routes).merge(crate::links::routes(links.clone(), cx.ingress.clone()));
        }
        Ok(built)
    }

    /// The `butler doctor` line of every configured platform channel.
    pub async fn doctor(&self, channels: &ChannelsConfig) -> Vec<Check> {
        let mut checks = Vec::new();
        for entry in self.configured(channels) {
            checks.push(entry.doctor(channels).await);
        }
        checks
    }

    /// The commented sections `butler init` writes, by channel name, in registry order.
    pub fn init_sections(&self) -> Vec<(&'static str, &'static str)> {
        self.entries.iter().map(|e| (e.name(), e.init())).filter(|(_, text)| !text.is_empty()).collect()
    }
}

impl ChannelChecks for Registry {
    fn check(&self, channels: &ChannelsConfig, p: &mut Problems) {
        channels.refuse_unknown(&self.names(), p);
        for entry in self.configured(channels) {
            entry.check(channels, p);
        }
    }

    fn running(&self, channels: &ChannelsConfig) -> Vec<String> {
        let web = channels.web.enabled.then(|| crate::ids::WEB_CHANNEL.to_string());
        web.into_iter().chain(self.configured(channels).map(|e| e.name().to_string())).collect()
    }

    fn refuse_target(&self, channels: &ChannelsConfig, conversation: &ConversationRef) -> Option<String> {
        let entry = self.configured(channels).find(|e| e.name() == conversation.channel)?;
        entry.refuse_target(channels, conversation)
    }
}
