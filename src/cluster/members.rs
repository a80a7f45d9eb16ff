//! [`Cluster`]: this replica's view of the others, over Redis or alone. Leases, the bus and
//! the heartbeat are reached through it; the leader loop and the gate build on it. Facts are
//! what each replica states about itself for the others to compare (the marker it wrote in the
//! shared workspace, its config's digests): one Redis hash per kind, a field per replica; they
//! must never hold a secret.
//!
//! It must never hold a lock across an await, or read or write the database.

use super::bus::{self, BusMessage, Topic};
use super::error::unavailable;
use super::lease::{self, Lease};
use super::{ClusterError, RedisLink};
use crate::config::RedisConfig;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// This replica's view of the others.
pub struct Cluster {
    worker: String,
    lease_ms: u64,
    link: Option<RedisLink>,
    leases: lease::Leases,
    bus: bus::Bus,
    /// When Redis was last seen away or empty: heartbeats need time to come back after that.
    data_since: std::sync::Mutex<Option<std::time::Instant>>,
}

impl Cluster {
    /// One process, no Redis: leases are granted locally.
    pub fn single(worker: String) -> Arc<Self> {
        Arc::new(Self {
            worker: worker.clone(),
            lease_ms: 0,
            link: None,
            leases: lease::Leases::default(),
            bus: bus::Bus::new(worker),
            data_since: Default::default(),
        })
    }

    /// Connects to `[redis]`; fails if Redis cannot be reached at start.
    pub async fn connect(cfg: &RedisConfig, worker: String) -> Result<Arc<Self>, ClusterError> {
        let link = RedisLink::connect(cfg).await?;
        Ok(Arc::new(Self {
            worker: worker.clone(),
            lease_ms: cfg.lease_ms,
            link: Some(link),
            leases: lease::Leases::default(),
            bus: bus::Bus::new(worker),
            // The first look also sets the epoch: wait for every heartbeat at start too.
            data_since: Default::default(),
        }))
    }

    /// Whether other replicas may exist (Redis is configured).
    pub fn shared(&self) -> bool {
        self.link.is_some()
    }

    /// This replica's id: recorded on the inbox rows it claims, the value of its leases.
    pub fn worker(&self) -> &str {
        &self.worker
    }

    /// How long a lease lives without renewal.
    pub fn lease_ttl(&self) -> Duration {
        Duration::from_millis(self.lease_ms)
    }

    /// The Redis connection, when several replicas share the work.
    pub fn link(&self) -> Option<&RedisLink> {
        self.link.as_ref()
    }

    /// Takes the lease `name` for this replica: `Some` when it is ours (now or already),
    /// `None` when another replica holds it.
    pub async fn acquire(&self, name: &str) -> Result<Option<Lease>, ClusterError> {
        self.leases.acquire(self.link.as_ref(), &self.worker, name, self.lease_ms).await
    }

    /// The replica holding `name`, if any.
    pub async fn owner(&self, name: &str) -> Result<Option<String>, ClusterError> {
        match &self.link {
            Some(link) => link.get(&link.lease_key(name)).await,
            None => Ok(self.leases.is_held(name).then(|| self.worker.clone())),
        }
    }

    /// Gives `name` back (only if it is still ours).
    pub async fn release(&self, name: &str) {
        self.leases.release(self.link.as_ref(), &self.worker, name).await;
    }

    /// Replicas whose heartbeat lease is live (this one included). Right after Redis lost its
    /// data (a restart) and for two lease periods after, the heartbeats are still being
    /// written again: the answer is `Unavailable` then, so nobody is taken for dead.
    pub async fn alive(&self) -> Result<Vec<String>, ClusterError> {
        let Some(link) = &self.link else { return Ok(vec![self.worker.clone()]) };
        let result = link.lost_data().await;
        let now = std::time::Instant::now();
        {
            let mut since = self.data_since.lock().unwrap_or_else(|p| p.into_inner());
            match result {
                Ok(true) => {
                    *since = Some(now);
                    return Err(ClusterError::Unavailable("redis lost its data; waiting for heartbeats".into()));
                }
                Err(e) => {
                    *since = Some(now);
                    return Err(e);
                }
                Ok(false) => {}
            }
            if since.is_some_and(|t| now.duration_since(t) < self.lease_ttl() * 2) {
                return Err(ClusterError::Unavailable("redis was away; waiting for heartbeats".into()));
            }
        }
        lease::alive_workers(link).await
    }

    /// Sends `payload` on `topic` to every replica (this one included).
    pub async fn publish(&self, topic: Topic, payload: &str) {
        self.bus.publish(self.link.as_ref(), topic, payload).await;
    }

    /// Messages published on the bus from now on, from every replica.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<BusMessage> {
        self.bus.subscribe()
    }

    /// Leases this replica holds now.
    pub fn held(&self) -> usize {
        self.leases.held()
    }

    /// Whether Redis answers (always true without Redis).
    pub async fn ping(&self) -> Result<(), ClusterError> {
        match &self.link {
            Some(link) => link.ping().await,
            None => Ok(()),
        }
    }

    /// Starts the heartbeat and lease renewal and the bus receiver (with Redis only).
    pub fn start(self: &Arc<Self>, tracker: &TaskTracker, cancel: CancellationToken) {
        let Some(link) = self.link.clone() else { return };
        let me = self.clone();
        let stop = cancel.clone();
        tracker.spawn(async move { me.leases.renew_loop(&link, &me.worker, me.lease_ms, stop).await });
        if let Some(link) = self.link.clone() {
            let me = self.clone();
            tracker.spawn(async move { me.bus.receive_loop(&link, cancel).await });
        }
    }

    /// Gives back every lease at a graceful stop, so others take over at once.
    pub async fn release_all(&self) {
        self.leases.release_all(self.link.as_ref(), &self.worker).await;
    }

    /// States this replica's `value` for `kind` (nothing without Redis).
    pub async fn state_fact(&self, kind: &str, value: &str) -> Result<(), ClusterError> {
        let Some(link) = self.link() else { return Ok(()) };
        let mut c = link.conn();
        redis::cmd("HSET")
            .arg(link.key(&format!("facts:{kind}")))
            .arg(self.worker())
            .arg(value)
            .query_async::<()>(&mut c)
            .await
            .map_err(unavailable)
    }

    /// What every other live replica stated for `kind`, by replica (empty without Redis).
    /// Fields of replicas no longer alive are removed on the way; while the live replicas are
    /// not known (Redis lost its data and the heartbeats are coming back), every field counts.
    pub async fn facts_of_others(&self, kind: &str) -> Result<BTreeMap<String, String>, ClusterError> {
        let Some(link) = self.link() else { return Ok(BTreeMap::new()) };
        let alive = self.alive().await.ok();
        let key = link.key(&format!("facts:{kind}"));
        let mut c = link.conn();
        let all: BTreeMap<String, String> =
            redis::cmd("HGETALL").arg(&key).query_async(&mut c).await.map_err(unavailable)?;
        let mut out = BTreeMap::new();
        for (worker, value) in all {
            if worker == self.worker() {
                continue;
            }
            if alive.as_ref().is_none_or(|a| a.contains(&worker)) {
                out.insert(worker, value);
            } else {
                let _: Result<(), _> = redis::cmd("HDEL").arg(&key).arg(&worker).query_async(&mut c).await;
            }
        }
        Ok(out)
    }
}
