//! The composition root: builds every component from the config, starts the tasks, and stops
//! them in order. This is the only place that knows all the parts; it must stay free of
//! business logic.

mod agent;
mod embeddings;
mod error;
mod panels;
mod replicas;
pub(crate) mod shared;
mod stores;
mod tasks;

pub use agent::{config_warnings, own_tool_names};
pub use error::AppError;
use tasks::Tasks;

use crate::agent::Agent;
use crate::cluster::{Cluster, RedisGate};
use crate::config::{Config, SandboxMode};
use crate::hooks::Hooks;
use crate::http::{self, Health};
use crate::ingress::{Dispatcher, InboxIngress};
use crate::llm::{Provider, Tiers};
use crate::mcp::McpManager;
use crate::outbox::{Channels, Deliverer, DeliveryConfig};
use crate::session::{SessionDeps, Sessions};
use crate::store::{self, Store};
use crate::tools::Tool;
use crate::triage::{Access, Triage, TriageParts, Triggers};
use crate::web;
use butler_channel::limit::Gate;
use butler_channel::{Channel, Identity, Ingress};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// What to run besides the core.
pub struct AppOptions {
    pub config: Config,
    /// Serve HTTP (health, metrics, web chat). `butler chat` runs without it.
    pub http: bool,
    /// Channels beyond the configured ones (the terminal, test channels).
    pub extra_channels: Vec<Arc<dyn Channel>>,
    /// Tools beyond the built-in ones.
    pub extra_tools: Vec<Arc<dyn Tool>>,
    /// The config file in use: tools may never touch it (nor the database files).
    pub config_path: Option<std::path::PathBuf>,
    /// The platform channels `[channels.<name>]` may configure: built-in ones, and a test's.
    pub channels: crate::channels::Registry,
}

impl AppOptions {
    pub fn serve(config: Config) -> Self {
        Self {
            config,
            http: true,
            extra_channels: vec![],
            extra_tools: vec![],
            config_path: None,
            channels: crate::channels::builtin(),
        }
    }
}

/// The checks of the config sections whose rules belong to a component, for
/// [`crate::config::load`] and [`check_config`]: config sits below the components and cannot
/// call them itself.
pub const CONFIG_CHECKS: crate::config::OwnerChecks<'static> = crate::config::OwnerChecks {
    permissions: crate::permissions::check_config,
    secrets: crate::secrets::check_config,
    tools: crate::tools::check_config,
    schedules: crate::schedule::check_config,
    channels: &crate::channels::BuiltIn,
    mcp: crate::mcp::check_config,
    skills: crate::skills::check_config,
    delegation: crate::delegate::check_config,
    media: crate::media::check_config,
    log: crate::telemetry::check_config,
    prices: crate::llm::check_config,
    memory: crate::memory::check_config,
};

/// Every check of `cfg`: config's own sections and the components' (`[permissions]`, `[tools]`,
/// `[[schedules]]`), all problems at once in the order of the sections, as
/// [`crate::config::ConfigError::Invalid`] with origin `config`.
pub fn check_config(cfg: &Config) -> Result<(), crate::config::ConfigError> {
    cfg.validate_with(&CONFIG_CHECKS)
}

/// [`check_config`] with the platform channels of `channels` (the built-in ones and any a test
/// registered) in place of the built-in registry.
pub fn check_config_with(cfg: &Config, channels: &crate::channels::Registry) -> Result<(), crate::config::ConfigError> {
    cfg.validate_with(&crate::config::OwnerChecks { channels, ..CONFIG_CHECKS })
}

/// A running Butler.
pub struct App {
    pub store: Arc<dyn Store>,
    pub ingress: Arc<dyn Ingress>,
    pub sessions: Sessions,
    pub llm: Arc<dyn Provider>,
    /// The MCP servers, started in the background; stopped after the sessions.
    pub mcp: Arc<McpManager>,
    /// Where the HTTP server listens, when it runs.
    pub addr: Option<SocketAddr>,
    deliverer: Arc<Deliverer>,
    ready: Arc<AtomicBool>,
    grace: Duration,
    /// Intake: HTTP, channel receivers, the dispatcher, the scheduler; stopped first.
    intake: Tasks,
    /// The delivery loop, stopped after the sessions have drained.
    delivery: Tasks,
    /// Best-effort background work (the archivist); stopped last.
    background: Tasks,
    /// Child agents; background ones stop after the sessions.
    running: Arc<crate::delegate::Running>,
    /// The other replicas (or this process alone); its leases are given back at the end.
    pub cluster: Arc<Cluster>,
}

impl App {
    /// Builds everything along the path of one message and starts it: the store, the channels
    /// and their ingress, the deliverer, the agent and the sessions that run it, triage; then
    /// delivery, intake (dispatcher, approval reaper, scheduler, receivers), last HTTP.
    pub async fn start(opts: AppOptions) -> Result<Self, AppError> {
        let cfg = opts.config;
        let hooks = check_isolation(&cfg)?;
        // The named secrets, read once (a `file` that cannot be read stops the start here).
        let vault = crate::secrets::Vault::load(&cfg)?;
        let store = open_store(&cfg).await?;
        // The terminal and the local page are one person before anything is said to either.
        crate::triage::access::ensure_local_owner(&*store, &local_identities(&cfg), &cfg.agent.timezone).await?;
        let cluster = replicas::join(&cfg).await?;
        let background = Tasks::default();
        cluster.start(&background.tracker, background.cancel.clone());
        let llm = crate::llm::from_config(&cfg.llm);
        // Built once: each tier's provider, and the prices of every configured model.
        let tiers = Tiers::new(&cfg.llm, llm.clone());

        let wake = Arc::new(Notify::new());
        let ingress_of = InboxIngress::new(store.clone(), wake.clone());
        let inbox = Arc::new(ingress_of.with_held(store.clone()).with_cursors(store.clone()));
        let ingress: Arc<dyn Ingress> = inbox.clone();
        // Where rate limits, holds and lockouts are kept: shared by the replicas with Redis.
        let gate = cluster.link().map_or_else(Gate::local, |link| Gate::shared(Arc::new(RedisGate::for_link(link))));
        let (web_out, web_rx) = tokio::sync::mpsc::channel(1024);
        let relay = cluster.shared().then_some(web_out);
        let ChannelSet { out: channels, names, routes, hub, uploads, files } =
            build_channels(&cfg, &store, &ingress, (opts.http, &opts.channels), opts.extra_channels, relay, &gate)
                .await?;
        inbox.release_held_on(channels.with_reply_window());

        let claims: Option<Arc<dyn store::ReplicaStore>> = cluster.shared().then(|| store.clone() as _);
        let deliverer = Deliverer::new(store.clone(), channels.clone(), DeliveryConfig::default(), claims);
        // The servers join as they become ready; start-up never waits for one.
        let mcp = McpManager::start(&cfg.mcp, std::path::Path::new(&cfg.tools.workspace_dir), &vault);
        // Children run in this process; background ones stop at shutdown and are reported as
        // interrupted at the next start.
        let running = crate::delegate::Running::new(CancellationToken::new()).on_worker(cluster.worker());
        // With several replicas another one may be running them: see ARCHITECTURE.md.
        let recall = embeddings::recall(&cfg, &store, &background).await?;
        let agent_stores = stores::agent(&store, &recall);
        let recovered = if cluster.shared() { 0 } else { crate::agent::recover_background(&agent_stores).await? };
        if recovered > 0 {
            tracing::info!(recovered, "background task results handed over after an earlier stop");
        }
        let media = Arc::new(crate::media::Media::new(&cfg.media, files));
        let agent = agent::build(
            &cfg,
            agent_stores,
            &tiers,
            &deliverer,
            (hooks, &vault),
            opts.extra_tools,
            opts.config_path.as_deref(),
        )
        .with_running(running.clone())
        .with_media(media);
        let agent = agent.with_tool_source(mcp.clone());
        let archivist = start_archivist(&cfg, &store, &tiers, &background);
        for warning in crate::delegate::archetype_tool_warnings(&cfg, &agent.tool_names()) {
            tracing::warn!(%warning, "config");
        }
        let overview = crate::mcp::ToolsOverview { own: agent.tool_names(), mcp: mcp.clone() };
        let sessions = build_sessions(&cfg, (agent, &store), &channels, &deliverer, archivist, &cluster);
        let access = build_access(&cfg, &gate, &cluster);
        let (triage, schedules) = build_triage(
            &cfg,
            (&store, recall.memory),
            &tiers,
            &sessions,
            &deliverer,
            overview,
            &running,
            access.clone(),
        );

        let delivery = start_delivery(&deliverer);
        let dispatcher = build_dispatcher(&cfg, &store, (triage, &sessions), &deliverer, wake.clone(), names, &cluster);
        let intake = start_intake(dispatcher, &store, &ingress, &channels, opts.http.then_some(schedules), &cluster);
        replicas::start_listener(&cluster, wake, hub.clone(), (sessions.clone(), running.clone()), access, &intake);
        replicas::start_web_relay(&cluster, web_rx, &background);
        if let Some(hub) = &hub {
            // The OpenAI API's waits learn here (and through the relay) when their event settles.
            intake.tracker.spawn(hub.clone().announce_settled(store.settled(), intake.cancel.clone()));
        }

        let ready = Arc::new(AtomicBool::new(false));
        let mut addr = None;
        if opts.http {
            let web = hub
                .zip(uploads)
                .map(|(hub, uploads)| (hub, uploads, panels::panels(&cfg, &store, &tiers, &mcp, channels.names())));
            let (extra, streamed) = http_routes(&cfg, &store, &llm, &ingress, web, routes, &intake.cancel);
            addr = serve_http(&cfg, &store, &cluster, extra, streamed, &ready, &intake).await?;
        }
        ready.store(true, Ordering::Release);
        Ok(Self {
            store,
            ingress,
            sessions,
            llm,
            addr,
            deliverer,
            ready,
            grace: Duration::from_secs(cfg.server.shutdown_grace_secs),
            intake,
            delivery,
            background,
            mcp,
            running,
            cluster,
        })
    }

    /// Graceful stop: no new work, running turns finish or park within the grace period, the
    /// outbox is flushed, the store closed.
    pub async fn shutdown(self) {
        tracing::info!("shutting down");
        self.ready.store(false, Ordering::Release);
        self.intake.stop().await;
        let started = tokio::time::Instant::now();
        self.sessions.shutdown(self.grace).await;
        self.running.close().await;
        // The sessions have ended: others may take them (and the leader roles) at once.
        self.cluster.release_all().await;
        // No turn uses a server any more: stop them all (whole process groups).
        self.mcp.stop().await;
        self.delivery.stop().await;
        self.background.stop().await;
        let left = self.grace.saturating_sub(started.elapsed()).max(Duration::from_secs(2));
        self.deliverer.clone().flush(left).await;
        self.store.close().await;
        tracing::info!("stopped");
    }
}

/// Refuses to start the shell tool or a hook with `sandbox = true` without the isolation
/// configured for it; builds the hooks.
fn check_isolation(cfg: &Config) -> Result<Arc<Hooks>, AppError> {
    if cfg.tools.shell.enabled {
        // The shell never runs without the isolation it was configured with.
        let sandbox = crate::tools::sandbox::Sandbox::from_config(&cfg.tools.shell)?;
        tracing::info!(
            sandbox = sandbox.bwrap().map_or("none".into(), |p| p.display().to_string()),
            network = cfg.tools.shell.network,
            "shell tool on"
        );
    }
    // Nor does a stdio MCP server (bubblewrap unless it says `sandbox = "none"`).
    let jailed = cfg.mcp.servers.iter().position(|s| s.command.is_some() && s.sandbox == SandboxMode::Bwrap);
    if let Some(index) = jailed.filter(|_| crate::tools::sandbox::find_bwrap().is_none()) {
        return Err(crate::tools::sandbox::SandboxError::ServerBwrapMissing { index }.into());
    }
    // Nor does a hook with `sandbox = true`.
    Ok(Arc::new(Hooks::try_new(&cfg.hooks)?))
}

/// Connects to the database and applies pending migrations.
async fn open_store(cfg: &Config) -> Result<Arc<dyn Store>, AppError> {
    let store = store::connect(cfg.database.url.expose(), cfg.database.max_connections).await?;
    store.migrate().await?;
    Ok(store)
}

/// The channels of this process.
struct ChannelSet {
    /// Where replies go out: the web chat, the platforms and the extra channels.
    out: Channels,
    /// The channels whose inbox events this process handles (and `hook`, for triggers).
    names: Vec<String>,
    /// The channels' HTTP routes (`/hooks/{name}`, platform webhooks and interactivity).
    routes: axum::Router,
    /// The web chat's open pages, when the web chat is on.
    hub: Option<Arc<web::WebHub>>,
    /// The web chat's files (uploads, files Butler sent), when the web chat is on.
    uploads: Option<Arc<web::Uploads>>,
    /// How each channel fetches the files people attach.
    files: std::collections::BTreeMap<String, Arc<dyn butler_channel::FileSource>>,
}

/// Builds the platform channels, the web chat and the extra channels, and takes back what a
/// dead process left half-done on them. `registry` has the platform channels the config may
/// name (built only with `http`). `relay` is where the web chat sends its events for the
/// other replicas: `Some` exactly when Redis joins this process to others.
async fn build_channels(
    cfg: &Config,
    store: &Arc<dyn Store>,
    ingress: &Arc<dyn Ingress>,
    (http, registry): (bool, &crate::channels::Registry),
    extra: Vec<Arc<dyn Channel>>,
    relay: Option<tokio::sync::mpsc::Sender<String>>,
    gate: &Gate,
) -> Result<ChannelSet, AppError> {
    let links = crate::links::Links::load(&cfg.server, &**store, store.clone()).await?;
    let cx = crate::channels::Context { ingress: ingress.clone(), gate, links };
    let platforms = registry.build(&cfg.channels, &cx, http).await?;
    let shared = relay.is_some();
    let hub = (http && cfg.channels.web.enabled).then(|| {
        Arc::new(match relay {
            Some(out) => web::WebHub::relayed(out),
            None => web::WebHub::default(),
        })
    });
    let mut out = Channels::default();
    let mut files = platforms.files;
    let uploads = hub.as_ref().map(|_| Arc::new(web::Uploads::from_config(cfg)));
    if let (Some(hub), Some(uploads)) = (&hub, &uploads) {
        out.add(Arc::new(web::WebChannel::new(&stores::web(store), hub.clone(), uploads.clone())));
        files.insert(crate::ids::WEB_CHANNEL.to_string(), uploads.clone() as Arc<dyn butler_channel::FileSource>);
    }
    for ch in platforms.channels.into_iter().chain(extra) {
        out.add(ch);
    }
    let mut names = out.names();
    if http && crate::channels::TRIGGERS && !cfg.triggers.is_empty() {
        // Trigger events arrive on the `hook` channel (POST /hooks/{name}); it sends nothing.
        names.push(crate::ids::HOOK_CHANNEL.into());
    }
    // Without Redis whatever a dead process left half-done on these channels is ours to redo;
    // with Redis, the reaper takes back only what replicas whose heartbeat expired held.
    if !shared {
        let recovered = store.inbox_recover(&names).await?;
        if recovered > 0 {
            tracing::info!(recovered, "resuming events interrupted by an earlier stop");
        }
    }
    // Drafts whose event ended without finishing them (only those: a draft of an event that
    // will run again is finished by that run), whoever left them: safe beside live replicas.
    crate::outbox::settle_orphan_drafts(&**store).await?;
    let routes = platforms.routes.merge(crate::channels::trigger_routes(&cfg.triggers, ingress.clone(), gate));
    Ok(ChannelSet { out, names, routes, hub, uploads, files })
}

/// The archivist (when memory and the archivist are on), a background task that stops last;
/// it runs on the `worker` tier when one is configured.
fn start_archivist(
    cfg: &Config,
    store: &Arc<dyn Store>,
    tiers: &Tiers,
    background: &Tasks,
) -> Option<Arc<crate::memory::Archivist>> {
    (cfg.memory.enabled && cfg.memory.archivist).then(|| {
        crate::memory::Archivist::start(
            (store.clone(), store.clone(), store.clone()),
            tiers.worker().provider,
            tiers.prices().clone(),
            &background.tracker,
            background.cancel.clone(),
        )
    })
}

/// The sessions: one actor per conversation, each running the agent's turns.
fn build_sessions(
    cfg: &Config,
    (agent, store): (Agent, &Arc<dyn Store>),
    channels: &Channels,
    deliverer: &Arc<Deliverer>,
    archivist: Option<Arc<crate::memory::Archivist>>,
    cluster: &Arc<Cluster>,
) -> Sessions {
    Sessions::new(
        SessionDeps::new(
            agent,
            stores::sessions(store),
            channels.clone(),
            deliverer.clone(),
            cfg.agent.clone(),
            cfg.limits.clone(),
            archivist,
            cluster.clone(),
        )
        .with_profile(if cfg.memory.enabled { cfg.memory.profile_max_tokens } else { 0 }),
    )
}

/// Who may use Butler: the configured owners and `allow` entries plus the local operator's
/// identities (`cli:local`, the local web page, the web token's owner); refusals, wrong codes
/// and lockouts kept in `gate`; links and approvals announced on the cluster's bus.
fn build_access(cfg: &Config, gate: &Gate, cluster: &Arc<Cluster>) -> Arc<Access> {
    let local = local_identities(cfg);
    if cfg.access.policy == crate::config::AccessPolicy::Open {
        tracing::warn!("[access] policy = \"open\": anyone who can reach Butler can use it");
    }
    let access = Access::new(&cfg.access, local, &cfg.agent.timezone).with_gate(gate.clone());
    Arc::new(access.with_bus(cluster.clone()))
}

/// The local operator's identities: the terminal, the web page on this machine (no token), the
/// web token's owner. One person, the owner.
fn local_identities(cfg: &Config) -> Vec<Identity> {
    let mut local = vec![Identity::new("cli", "local")];
    if web::WebAuth::from_config(&cfg.channels.web).is_local() {
        local.push(Identity::new(crate::ids::WEB_CHANNEL, web::LOCAL_USER));
    }
    if cfg.channels.web.token.is_some() {
        local.push(Identity::new(crate::ids::WEB_CHANNEL, "owner"));
    }
    local
}

/// The webhook triggers (their classifier on the `worker` tier when configured), the scheduled
/// jobs, and triage over them, with `access` deciding who may use Butler.
#[allow(clippy::too_many_arguments)]
fn build_triage(
    cfg: &Config,
    (store, memory): (&Arc<dyn Store>, Arc<dyn store::MemoryStore>),
    tiers: &Tiers,
    sessions: &Sessions,
    deliverer: &Arc<Deliverer>,
    tools: crate::mcp::ToolsOverview,
    running: &Arc<crate::delegate::Running>,
    access: Arc<Access>,
) -> (Triage, Arc<crate::schedule::Schedules>) {
    let (worker, prices) = (tiers.worker().provider, tiers.prices().clone());
    let triggers =
        Arc::new(Triggers::new(&cfg.triggers, (store.clone(), store.clone()), worker, prices, access.clone()));
    let schedules =
        Arc::new(crate::schedule::Schedules::new(&cfg.schedules, store.clone(), store.clone(), access.clone()));
    let triage = Triage::new(TriageParts {
        store: stores::triage(store, memory),
        access,
        sessions: sessions.clone(),
        triggers,
        tools,
        model: tiers.choice(crate::config::CHAT_TIER).provider.model().to_string(),
        timezone: cfg.agent.timezone.clone(),
        deliverer: deliverer.clone(),
        schedules: schedules.clone(),
        running: running.clone(),
        usage: crate::usage::Usage::new(store.clone(), tiers.prices().clone(), &cfg.limits),
    });
    (triage, schedules)
}

/// Starts delivery: the outbox worker sends committed replies until it is stopped.
fn start_delivery(deliverer: &Arc<Deliverer>) -> Tasks {
    let delivery = Tasks::default();
    delivery.tracker.spawn(deliverer.clone().run(delivery.cancel.clone()));
    delivery
}

/// The dispatcher: claims this process's inbox events in order, asks triage about each and
/// hands session work to `sessions`.
fn build_dispatcher(
    cfg: &Config,
    store: &Arc<dyn Store>,
    (triage, sessions): (Triage, &Sessions),
    deliverer: &Arc<Deliverer>,
    wake: Arc<Notify>,
    names: Vec<String>,
    cluster: &Arc<Cluster>,
) -> Dispatcher {
    Dispatcher::new(
        stores::dispatch(store),
        triage,
        sessions.clone(),
        deliverer.clone(),
        wake,
        names,
        cluster.clone(),
        cfg.limits.max_event_attempts,
    )
}

/// Starts intake: the dispatcher, the reaper (on one replica), the scheduler (when given) and
/// every channel's receiver (the exclusive ones on one replica).
fn start_intake(
    dispatcher: Dispatcher,
    store: &Arc<dyn Store>,
    ingress: &Arc<dyn Ingress>,
    channels: &Channels,
    schedules: Option<Arc<crate::schedule::Schedules>>,
    cluster: &Arc<Cluster>,
) -> Tasks {
    let intake = Tasks::default();
    let (tasks, stop) = (&intake.tracker, &intake.cancel);
    tasks.spawn(Arc::new(dispatcher).run(stop.clone()));
    replicas::start_reaper(cluster, (store.clone(), replicas::leftovers(store)), ingress.clone(), &intake);
    if let Some(schedules) = schedules {
        tasks.spawn(schedules.run(ingress.clone(), stop.clone()));
    }
    for ch in channels.iter() {
        replicas::start_receiver(cluster, ch.clone(), ingress.clone(), &intake);
    }
    intake
}

/// The routes served besides health and metrics: the web chat (when on) and the channels'
/// endpoints (webhooks, the platforms'); then the routes that stream their bodies (uploads).
fn http_routes(
    cfg: &Config,
    store: &Arc<dyn Store>,
    llm: &Arc<dyn Provider>,
    ingress: &Arc<dyn Ingress>,
    web: Option<(Arc<web::WebHub>, Arc<web::Uploads>, web::Panels)>,
    platform_routes: axum::Router,
    shutdown: &CancellationToken,
) -> (axum::Router, axum::Router) {
    let (extra, streamed) = if let Some((hub, uploads, panels)) = web {
        let info = web::PageInfo {
            llm_configured: !cfg.llm.model.is_empty(),
            provider: llm.name().to_string(),
            model: llm.model().to_string(),
        };
        let auth = web::WebAuth::from_config(&cfg.channels.web);
        let state = web::WebState::new(stores::web(store), ingress.clone(), hub, auth, info, shutdown.clone(), uploads);
        let routes = web::routes(state.clone()).merge(web::download_routes(state.clone()));
        let routes = routes.merge(web::event_routes(state.clone())).merge(web::panel_routes(state.clone(), panels));
        (routes.merge(web::openai_routes(state.clone())), web::upload_routes(state))
    } else {
        (axum::Router::new(), axum::Router::new())
    };
    (extra.merge(platform_routes), streamed)
}

/// Binds `[server] listen` and serves HTTP (health, metrics and `extra`) as an intake task;
/// returns the address it listens on.
async fn serve_http(
    cfg: &Config,
    store: &Arc<dyn Store>,
    cluster: &Arc<Cluster>,
    extra: axum::Router,
    streamed: axum::Router,
    ready: &Arc<AtomicBool>,
    intake: &Tasks,
) -> Result<Option<SocketAddr>, AppError> {
    let listener = tokio::net::TcpListener::bind(&cfg.server.listen)
        .await
        .map_err(|source| AppError::Bind { addr: cfg.server.listen.clone(), source })?;
    let addr = listener.local_addr().ok();
    let health = Health::new((store.clone(), store.clone(), store.clone()), cluster.clone(), ready.clone());
    // Without a web token the API trusts `user`: only this machine's own names are served.
    let local = cfg.channels.web.enabled && web::WebAuth::from_config(&cfg.channels.web).is_local();
    let hosts = local.then(|| addr.map(|a| http::HostRule::local(a, &cfg.server))).flatten();
    let router = http::router(health, extra, streamed, &cfg.server, hosts);
    let limits = http::ServeLimits::from_config(&cfg.server);
    intake.tracker.spawn(http::serve(listener, router, limits, intake.cancel.clone()));
    Ok(addr)
}
