//! The parts of the composition that exist for several replicas: joining the cluster, the
//! leader-only work (exclusive receivers, the reaper that takes back a dead replica's events
//! and expires approvals), and the bus listener that wakes the dispatcher and relays web chat
//! events. With one process every lease is granted locally, so the same code runs.
//! Like the rest of `app`, it must stay free of business logic.

use super::error::AppError;
use super::tasks::Tasks;
use crate::cluster::{run_as_leader, Cluster, Topic};
use crate::config::Config;
use crate::metrics::METRICS;
use crate::store::{ApprovalStore, RecoveryStore, ReplicaStore};
use butler_channel::{Channel, Ingress};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// This replica's id: the process id and a random part (a restarted process is a new replica).
pub(super) fn worker_id() -> String {
    format!("{}-{}", std::process::id(), uuid::Uuid::new_v4().simple())
}

/// Joins the replicas through `[redis]`, or runs alone without it.
pub(super) async fn join(cfg: &Config) -> Result<Arc<Cluster>, AppError> {
    let worker = worker_id();
    match &cfg.redis {
        Some(_) if cfg.database.url.expose().starts_with("sqlite:") => Err(AppError::Replicas(
            "[redis] is set but [database] url is SQLite: several replicas need one shared database; \
             set [database] url to postgres://..., or remove [redis] to run one process"
                .into(),
        )),
        Some(redis) => {
            let cluster = Cluster::connect(redis, worker).await.map_err(AppError::Redis)?;
            tracing::info!(worker = cluster.worker(), lease_ms = redis.lease_ms, "joined the replicas through redis");
            // The workspace must be the others' (else no start), the config should be.
            super::shared::check(cfg, &cluster).await?;
            Ok(cluster)
        }
        None => Ok(Cluster::single(worker)),
    }
}

/// Runs a channel's receiver: under a leader lease when only one process may run it (long
/// polling, a gateway, a socket), everywhere otherwise.
pub(super) fn start_receiver(cluster: &Arc<Cluster>, ch: Arc<dyn Channel>, ingress: Arc<dyn Ingress>, tasks: &Tasks) {
    let cancel = tasks.cancel.clone();
    if ch.caps().exclusive && cluster.shared() {
        let name = format!("receiver:{}", ch.name());
        tasks.tracker.spawn(run_as_leader(cluster.clone(), name, cancel, move |stop| {
            receive(ch.clone(), ingress.clone(), stop)
        }));
    } else {
        tasks.tracker.spawn(receive(ch, ingress, cancel));
    }
}

/// One channel's receiver until `stop` fires (or it fails, which is logged).
async fn receive(ch: Arc<dyn Channel>, ingress: Arc<dyn Ingress>, stop: CancellationToken) {
    if let Err(e) = ch.run(ingress, stop).await {
        tracing::error!(channel = ch.name(), error = %e, "channel receiver stopped");
    }
}

/// The reaper, on one replica at a time: expires approvals nobody answered and, with several
/// replicas, takes back the events of replicas whose heartbeat has expired.
pub(super) fn start_reaper(
    cluster: &Arc<Cluster>,
    (approvals, store): (Arc<dyn ApprovalStore>, Leftovers),
    ingress: Arc<dyn Ingress>,
    tasks: &Tasks,
) {
    let me = cluster.clone();
    tasks.tracker.spawn(run_as_leader(cluster.clone(), "reaper".into(), tasks.cancel.clone(), move |stop| {
        let (approvals, store, ingress, cluster) = (approvals.clone(), store.clone(), ingress.clone(), me.clone());
        async move {
            let expiring = expire_approvals(approvals, ingress, stop.clone());
            let taking = take_over_dead(cluster, store, stop);
            tokio::join!(expiring, taking);
        }
    }));
}

/// Every third of a lease period: events held by replicas that are no longer alive go back
/// to `pending` (charged like a crash, only to the events that were running), everyone is
/// woken to claim them, and the reply drafts a dead replica left to events that ended are
/// settled.
/// What a dead replica leaves: the events it held, its reply drafts, its background tasks
/// (their rows, and the inbox their reports go to).
pub(super) type Leftovers = (
    Arc<dyn ReplicaStore>,
    Arc<dyn RecoveryStore>,
    Arc<dyn crate::store::DelegationStore>,
    Arc<dyn crate::store::InboxStore>,
);

/// [`Leftovers`] from the store.
pub(super) fn leftovers(store: &Arc<dyn crate::store::Store>) -> Leftovers {
    (store.clone(), store.clone(), store.clone(), store.clone())
}

async fn take_over_dead(cluster: Arc<Cluster>, (events, drafts, tasks, inbox): Leftovers, cancel: CancellationToken) {
    if !cluster.shared() {
        return;
    }
    let mut tick = tokio::time::interval((cluster.lease_ttl() / 3).max(Duration::from_millis(100)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut known: Vec<String> = Vec::new();
    let mut first = true;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = cancel.cancelled() => return,
        }
        let alive = match cluster.alive().await {
            // Never with an empty list: that would take everything from everyone.
            Ok(alive) if alive.iter().any(|w| w == cluster.worker()) => alive,
            Ok(_) | Err(_) => continue,
        };
        // A replica gone since the last look may have died between ending an event and
        // settling its draft.
        let mut gone = known.iter().any(|w| !alive.contains(w));
        match events.inbox_takeover(&alive).await {
            Ok(0) => {}
            Ok(n) => {
                METRICS.takeovers.add(n);
                tracing::warn!(events = n, "took back events from a replica that stopped answering");
                cluster.publish(Topic::Wake, "*").await;
                gone = true;
            }
            Err(e) => tracing::warn!(error = %e, "could not take back a dead replica's events"),
        }
        // Background tasks of a replica gone (or, at the first look, gone before this leader).
        if gone || first {
            match crate::agent::report_orphans((&*tasks, &*inbox), &alive).await {
                Ok(0) => first = false,
                Ok(n) => {
                    first = false;
                    tracing::warn!(tasks = n, "reported the background tasks of a replica that stopped");
                    cluster.publish(Topic::Wake, "*").await;
                }
                Err(e) => {
                    first = true;
                    tracing::warn!(error = %e, "could not report a dead replica's background tasks");
                }
            }
        }
        if gone {
            match crate::outbox::settle_orphan_drafts(&*drafts).await {
                Ok(_) => known = alive,
                Err(e) => tracing::warn!(error = %e, "could not settle a dead replica's drafts"),
            }
        } else {
            known = alive;
        }
    }
}

/// Listens to the bus: a wake for this replica (or everyone) wakes the dispatcher; after the
/// bus reconnects it wakes too (wakes sent meanwhile are lost); web chat events from other
/// replicas reach this replica's open pages; a stop asked on another replica reaches the turn
/// running here (a `/stop`, also the chains of background work of that session running here);
/// an identity linked or approved on another replica leaves this replica's admission cache.
pub(super) fn start_listener(
    cluster: &Arc<Cluster>,
    wake: Arc<Notify>,
    hub: Option<Arc<crate::web::WebHub>>,
    (sessions, running): (crate::session::Sessions, Arc<crate::delegate::Running>),
    access: Arc<crate::triage::Access>,
    tasks: &Tasks,
) {
    if !cluster.shared() {
        return;
    }
    let mut rx = cluster.subscribe();
    let (me, cancel) = (cluster.worker().to_string(), tasks.cancel.clone());
    tasks.tracker.spawn(async move {
        loop {
            let msg = tokio::select! {
                m = rx.recv() => m,
                _ = cancel.cancelled() => return,
            };
            let msg = match msg {
                Ok(m) => m,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                    wake.notify_one();
                    continue;
                }
                Err(_) => return,
            };
            match msg.topic {
                Topic::Wake if msg.payload == me || msg.payload == "*" => wake.notify_one(),
                Topic::Reconnected => wake.notify_one(),
                Topic::Stop if msg.origin != me => {
                    if let Some((key, turn)) = msg.payload.split_once('\t') {
                        sessions.stop_here(key, (!turn.is_empty()).then_some(turn));
                        if turn.is_empty() {
                            running.chains().halt_session(key, "/stop");
                        }
                    }
                }
                Topic::Access if msg.origin != me => {
                    if let Ok(id) = msg.payload.parse() {
                        access.invalidate(&id);
                    }
                }
                Topic::Web if msg.origin != me => {
                    if let Some(hub) = &hub {
                        hub.relay(&msg.payload);
                    }
                }
                _ => {}
            }
        }
    });
}

/// Sends this replica's web chat events to the others, in order, until `cancel` fires.
pub(super) fn start_web_relay(cluster: &Arc<Cluster>, mut rx: tokio::sync::mpsc::Receiver<String>, tasks: &Tasks) {
    if !cluster.shared() {
        return;
    }
    let (cluster, cancel) = (cluster.clone(), tasks.cancel.clone());
    tasks.tracker.spawn(async move {
        loop {
            let event = tokio::select! {
                e = rx.recv() => e,
                _ = cancel.cancelled() => return,
            };
            let Some(event) = event else { return };
            cluster.publish(Topic::Web, &event).await;
        }
    });
}

/// Turns approvals nobody answered in time into expiry events (denials), through the same
/// ingress as everything else, so any replica can pick them up and each counts once.
async fn expire_approvals(store: Arc<dyn ApprovalStore>, ingress: Arc<dyn Ingress>, cancel: CancellationToken) {
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
