//! The composition root: builds every component from the config, starts the tasks, and stops
//! them in order. This is the only place that knows all the parts; it must stay free of
//! business logic.

use crate::agent::Agent;
use crate::config::Config;
use crate::hooks::Hooks;
use crate::http::{self, Health};
use crate::ingress::{Dispatcher, InboxIngress};
use crate::llm::Provider;
use crate::outbox::{Channels, Deliverer, DeliveryConfig};
use crate::permissions::Policy;
use crate::session::{SessionDeps, Sessions};
use crate::store::{self, Store, StoreError};
use crate::tools::{Tool, Tools};
use crate::triage::{Access, Triage, Triggers};
use crate::web;
use butler_channel::{Channel, Identity, Ingress};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

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
}

impl AppOptions {
    pub fn serve(config: Config) -> Self {
        Self { config, http: true, extra_channels: vec![], extra_tools: vec![], config_path: None }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot listen on {addr}: {source}; is another process using it? change [server] listen")]
    Bind { addr: String, source: std::io::Error },
    #[error(transparent)]
    Channel(#[from] crate::channels::BuildError),
    #[error(transparent)]
    Sandbox(#[from] crate::tools::sandbox::SandboxError),
    #[error(transparent)]
    Hooks(#[from] crate::hooks::HooksError),
}

/// Turns approvals nobody answered in time into expiry events (denials), through the same
/// ingress as everything else, so any replica can pick them up and each counts once.
async fn expire_approvals(store: Arc<dyn Store>, ingress: Arc<dyn Ingress>, cancel: CancellationToken) {
    let mut tick = tokio::time::interval(Duration::from_secs(2));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = cancel.cancelled() => return,
        }
        let due = match store.approvals_due(crate::store::now_ms(), 50).await {
            Ok(due) => due,
            Err(e) => {
                tracing::warn!(error = %e, "could not look for expired approvals");
                continue;
            }
        };
        for row in due {
            if let Some(event) = crate::triage::expiry_event(&row) {
                if let Err(e) = ingress.accept(event).await {
                    tracing::warn!(approval = %row.id, error = %e, "could not queue an approval expiry");
                }
            }
        }
    }
}

/// Files no tool may touch: the config file and the SQLite database with its journals.
fn protected_paths(cfg: &Config, config_path: Option<&std::path::Path>) -> Vec<std::path::PathBuf> {
    let mut out: Vec<std::path::PathBuf> = config_path.map(|p| p.to_path_buf()).into_iter().collect();
    let url = cfg.database.url.expose();
    if let Some(path) = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")) {
        let path = path.split('?').next().unwrap_or(path);
        if !path.is_empty() && !path.contains(":memory:") {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                out.push(std::path::PathBuf::from(format!("{path}{suffix}")));
            }
        }
    }
    out
}

/// A running Butler.
pub struct App {
    pub store: Arc<dyn Store>,
    pub ingress: Arc<dyn Ingress>,
    pub sessions: Sessions,
    pub llm: Arc<dyn Provider>,
    /// Where the HTTP server listens, when it runs.
    pub addr: Option<SocketAddr>,
    deliverer: Arc<Deliverer>,
    ready: Arc<AtomicBool>,
    grace: Duration,
    /// Stops intake: HTTP, channel receivers, the dispatcher.
    intake: CancellationToken,
    intake_tasks: TaskTracker,
    /// Stops the delivery loop (after the sessions have drained).
    delivery: CancellationToken,
    delivery_tasks: TaskTracker,
    /// Best-effort background work (the archivist); stopped last.
    background: TaskTracker,
    background_stop: CancellationToken,
}

impl App {
    pub async fn start(opts: AppOptions) -> Result<Self, AppError> {
        let cfg = opts.config;
        if cfg.tools.shell.enabled {
            // The shell never runs without the isolation it was configured with.
            let sandbox = crate::tools::sandbox::Sandbox::from_config(&cfg.tools.shell)?;
            tracing::info!(
                sandbox = sandbox.bwrap().map_or("none".into(), |p| p.display().to_string()),
                network = cfg.tools.shell.network,
                "shell tool on"
            );
        }
        // Nor does a hook with `sandbox = true`.
        let hooks = Arc::new(Hooks::try_new(&cfg.hooks)?);
        let store = store::connect(cfg.database.url.expose(), cfg.database.max_connections).await?;
        store.migrate().await?;
        let llm = crate::llm::from_config(&cfg.llm);

        let wake = Arc::new(Notify::new());
        let ingress: Arc<dyn Ingress> = Arc::new(InboxIngress::new(store.clone(), wake.clone()));
        let platforms = crate::channels::build(&cfg, ingress.clone(), opts.http).await?;

        let web_auth = web::WebAuth::from_config(&cfg.channels.web);
        let hub = Arc::new(web::WebHub::default());
        let mut channels = Channels::default();
        let web_on = opts.http && cfg.channels.web.enabled;
        if web_on {
            channels.add(Arc::new(web::WebChannel::new(store.clone(), hub.clone())));
        }
        for ch in platforms.channels.into_iter().chain(opts.extra_channels) {
            channels.add(ch);
        }
        let mut names = channels.names();
        if opts.http && cfg!(feature = "webhook") && !cfg.triggers.is_empty() {
            // Trigger events arrive on the `hook` channel (POST /hooks/{name}); it sends nothing.
            names.push("hook".into());
        }
        // Without Redis this is the only process for these channels: whatever a dead process
        // left half-done is ours to redo.
        let recovered = store.inbox_recover(&names).await?;
        if recovered > 0 {
            tracing::info!(recovered, "resuming events interrupted by an earlier stop");
        }

        let mut tools = Tools::builtin(&cfg);
        for t in opts.extra_tools {
            tools.add(t);
        }
        let deliverer = Deliverer::new(store.clone(), channels.clone(), DeliveryConfig::default());
        let agent = Agent {
            store: store.clone(),
            llm: llm.clone(),
            tools,
            limits: cfg.limits.clone(),
            max_tokens: cfg.llm.max_tokens,
            prices: crate::agent::Prices::from_config(&cfg.llm),
            recall_limit: cfg.memory.recall_limit,
            workspace_root: cfg.tools.workspace_dir.clone().into(),
            policy: Arc::new(
                Policy::new(&cfg.permissions, protected_paths(&cfg, opts.config_path.as_deref()))
                    .with_workspace_root(&cfg.tools.workspace_dir),
            ),
            hooks,
            deliverer: deliverer.clone(),
            context_window: cfg.llm.context_window,
            auto_recall: cfg.memory.enabled && cfg.memory.recall,
            recall_budget_tokens: cfg.memory.recall_budget_tokens,
        };
        let background = TaskTracker::new();
        let background_stop = CancellationToken::new();
        let archivist = (cfg.memory.enabled && cfg.memory.archivist).then(|| {
            crate::memory::Archivist::start(
                store.clone(),
                llm.clone(),
                crate::agent::Prices::from_config(&cfg.llm),
                &background,
                background_stop.clone(),
            )
        });
        let sessions = Sessions::new(SessionDeps {
            agent,
            channels: channels.clone(),
            deliverer: deliverer.clone(),
            agent_cfg: cfg.agent.clone(),
            limits: cfg.limits.clone(),
            archivist,
        });
        let mut local = vec![Identity::new("cli", "local")];
        if web_auth.is_local() {
            local.push(Identity::new(web::CHANNEL, web::LOCAL_USER));
        }
        if cfg.channels.web.token.is_some() {
            local.push(Identity::new(web::CHANNEL, "owner"));
        }
        if cfg.access.policy == crate::config::AccessPolicy::Open {
            tracing::warn!("[access] policy = \"open\": anyone who can reach Butler can use it");
        }
        let access = Arc::new(Access::new(&cfg.access, local, &cfg.agent.timezone));
        let triggers = Arc::new(Triggers::new(&cfg.triggers, store.clone(), llm.clone(), access.clone()));
        let schedules = Arc::new(crate::schedule::Schedules::new(&cfg.schedules, store.clone(), access.clone()));
        let triage = Triage {
            store: store.clone(),
            access,
            sessions: sessions.clone(),
            triggers,
            model: llm.model().to_string(),
            timezone: cfg.agent.timezone.clone(),
            deliverer: deliverer.clone(),
            schedules: schedules.clone(),
        };

        let intake = CancellationToken::new();
        let intake_tasks = TaskTracker::new();
        let delivery = CancellationToken::new();
        let delivery_tasks = TaskTracker::new();
        delivery_tasks.spawn(deliverer.clone().run(delivery.clone()));

        let dispatcher = Dispatcher {
            store: store.clone(),
            triage,
            deliverer: deliverer.clone(),
            wake,
            channels: names,
            worker: format!("{}-{}", std::process::id(), uuid::Uuid::new_v4().simple()),
            max_attempts: cfg.limits.max_event_attempts,
        };
        intake_tasks.spawn(Arc::new(dispatcher).run(intake.clone()));
        intake_tasks.spawn(expire_approvals(store.clone(), ingress.clone(), intake.clone()));
        if opts.http {
            intake_tasks.spawn(schedules.run(ingress.clone(), intake.clone()));
        }
        for ch in channels.iter() {
            let (ch, ingress, cancel) = (ch.clone(), ingress.clone(), intake.clone());
            intake_tasks.spawn(async move {
                if let Err(e) = ch.run(ingress, cancel).await {
                    tracing::error!(channel = ch.name(), error = %e, "channel receiver stopped");
                }
            });
        }

        let ready = Arc::new(AtomicBool::new(false));
        let mut addr = None;
        if opts.http {
            let listener = tokio::net::TcpListener::bind(&cfg.server.listen)
                .await
                .map_err(|source| AppError::Bind { addr: cfg.server.listen.clone(), source })?;
            addr = listener.local_addr().ok();
            let extra = if web_on {
                web::routes(web::WebState {
                    store: store.clone(),
                    ingress: ingress.clone(),
                    hub,
                    auth: web_auth,
                    info: web::PageInfo {
                        llm_configured: !cfg.llm.model.is_empty(),
                        provider: llm.name().to_string(),
                        model: llm.model().to_string(),
                    },
                    shutdown: intake.clone(),
                    owners: Default::default(),
                })
            } else {
                axum::Router::new()
            };
            #[cfg(feature = "webhook")]
            let extra = extra.merge(butler_webhook::routes(webhook_sources(&cfg.triggers), ingress.clone()));
            let extra = extra.merge(platforms.routes);
            let health = Health { store: store.clone(), ready: ready.clone() };
            let router = http::router(health, extra, &cfg.server);
            let limits = http::ServeLimits::from_config(&cfg.server);
            intake_tasks.spawn(http::serve(listener, router, limits, intake.clone()));
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
            intake_tasks,
            delivery,
            delivery_tasks,
            background,
            background_stop,
        })
    }

    /// Graceful stop: no new work, running turns finish or park within the grace period, the
    /// outbox is flushed, the store closed.
    pub async fn shutdown(self) {
        tracing::info!("shutting down");
        self.ready.store(false, Ordering::Release);
        self.intake.cancel();
        self.intake_tasks.close();
        self.intake_tasks.wait().await;
        let started = tokio::time::Instant::now();
        self.sessions.shutdown(self.grace).await;
        self.delivery.cancel();
        self.delivery_tasks.close();
        self.delivery_tasks.wait().await;
        self.background_stop.cancel();
        self.background.close();
        self.background.wait().await;
        let left = self.grace.saturating_sub(started.elapsed()).max(Duration::from_secs(2));
        self.deliverer.clone().flush(left).await;
        self.store.close().await;
        tracing::info!("stopped");
    }
}

/// The `[[triggers]]` sources as the webhook crate sees them.
#[cfg(feature = "webhook")]
fn webhook_sources(triggers: &[crate::config::TriggerConfig]) -> Vec<butler_webhook::Source> {
    use crate::config::SignatureKind;
    triggers
        .iter()
        .map(|t| butler_webhook::Source {
            name: t.name.clone(),
            secret: t.secret.expose().to_string(),
            scheme: match t.signature {
                SignatureKind::Github => butler_webhook::Scheme::Github,
                SignatureKind::Butler => butler_webhook::Scheme::Butler,
            },
            rate_limit_per_minute: t.rate_limit_per_minute,
        })
        .collect()
}
