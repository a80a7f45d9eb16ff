//! Leases: `SET <prefix>:lease:<name> <worker> NX PX <ttl>` to take one, one Lua script to renew
//! every lease a replica holds (a lease that vanished with a Redis restart is taken back if
//! nobody else took it), another to give one back only if it is still ours. A lease another
//! replica holds now is lost: its token is cancelled and it is forgotten.
//!
//! A lease is advice, not proof: the store's fencing token decides whose commit counts, so a
//! replica paused past its lease can never overwrite the new owner's work.

use super::error::{unavailable, ClusterError};
use super::link::RedisLink;
use crate::metrics::METRICS;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Leases named `worker:<id>` are the replicas' heartbeats.
pub(super) const WORKER_PREFIX: &str = "worker:";

const RENEW: &str = r"
local out = {}
for i, k in ipairs(KEYS) do
  local v = redis.call('GET', k)
  if v == ARGV[1] then
    redis.call('PEXPIRE', k, ARGV[2])
    out[i] = 1
  elseif not v then
    redis.call('SET', k, ARGV[1], 'PX', ARGV[2])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
";

const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
";

/// A lease this replica holds; `lost` fires when another replica has taken it.
#[derive(Clone, Debug)]
pub struct Lease {
    pub name: String,
    pub lost: CancellationToken,
}

#[derive(Default)]
pub(super) struct Leases {
    held: Mutex<HashMap<String, CancellationToken>>,
}

impl Leases {
    fn held_map(&self) -> MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn is_held(&self, name: &str) -> bool {
        self.held_map().contains_key(name)
    }

    pub(super) fn held(&self) -> usize {
        self.held_map().len()
    }

    fn remember(&self, name: &str) -> Lease {
        let mut held = self.held_map();
        let lost = held.entry(name.to_string()).or_default().clone();
        METRICS.leases_held.set(held.len() as i64);
        Lease { name: name.to_string(), lost }
    }

    fn forget(&self, name: &str) -> Option<CancellationToken> {
        let mut held = self.held_map();
        let token = held.remove(name);
        METRICS.leases_held.set(held.len() as i64);
        token
    }

    pub(super) async fn acquire(
        &self,
        link: Option<&RedisLink>,
        worker: &str,
        name: &str,
        ttl_ms: u64,
    ) -> Result<Option<Lease>, ClusterError> {
        let Some(link) = link else { return Ok(Some(self.remember(name))) };
        if self.is_held(name) {
            return Ok(Some(self.remember(name)));
        }
        let key = link.lease_key(name);
        let mut c = link.conn();
        let set: Option<String> = redis::cmd("SET")
            .arg(&key)
            .arg(worker)
            .arg("NX")
            .arg("PX")
            .arg(ttl_ms)
            .query_async(&mut c)
            .await
            .map_err(unavailable)?;
        if set.is_some() {
            return Ok(Some(self.remember(name)));
        }
        // Ours already (taken before a restart of this map, or by a renewal): keep it.
        let owner = link.get(&key).await?;
        Ok((owner.as_deref() == Some(worker)).then(|| self.remember(name)))
    }

    pub(super) async fn release(&self, link: Option<&RedisLink>, worker: &str, name: &str) {
        self.forget(name);
        let Some(link) = link else { return };
        let mut c = link.conn();
        let script = redis::Script::new(RELEASE);
        if let Err(e) = script.key(link.lease_key(name)).arg(worker).invoke_async::<i64>(&mut c).await {
            tracing::debug!(lease = name, error = %unavailable(e), "could not give a lease back; it expires by itself");
        }
    }

    pub(super) async fn release_all(&self, link: Option<&RedisLink>, worker: &str) {
        let names: Vec<String> = self.held_map().keys().cloned().collect();
        for name in names {
            self.release(link, worker, &name).await;
        }
    }

    /// Renews every held lease (and this replica's heartbeat) three times per lease period
    /// until `cancel` fires.
    pub(super) async fn renew_loop(&self, link: &RedisLink, worker: &str, ttl_ms: u64, cancel: CancellationToken) {
        let heartbeat = format!("{WORKER_PREFIX}{worker}");
        let _ = self.acquire(Some(link), worker, &heartbeat, ttl_ms).await;
        let mut tick = tokio::time::interval(Duration::from_millis((ttl_ms / 3).max(100)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut away = false;
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = cancel.cancelled() => return,
            }
            // The heartbeat is always renewed, even if a Redis restart lost it.
            self.remember(&heartbeat);
            match self.renew_once(link, worker, ttl_ms).await {
                Ok(()) if away => {
                    away = false;
                    tracing::info!("redis is back; leases renewed");
                }
                Ok(()) => {}
                Err(e) if !away => {
                    away = true;
                    tracing::warn!(error = %e, "cannot renew leases; taking no new work until redis is back");
                }
                Err(_) => {}
            }
        }
    }

    async fn renew_once(&self, link: &RedisLink, worker: &str, ttl_ms: u64) -> Result<(), ClusterError> {
        let names: Vec<String> = self.held_map().keys().cloned().collect();
        if names.is_empty() {
            return Ok(());
        }
        let script = redis::Script::new(RENEW);
        let mut c = link.conn();
        for chunk in names.chunks(500) {
            let mut call = script.prepare_invoke();
            for name in chunk {
                call.key(link.lease_key(name));
            }
            call.arg(worker).arg(ttl_ms);
            let kept: Vec<i64> = call.invoke_async(&mut c).await.map_err(unavailable)?;
            for (name, kept) in chunk.iter().zip(kept) {
                if kept == 0 {
                    if let Some(lost) = self.forget(name) {
                        METRICS.leases_lost.inc();
                        tracing::warn!(lease = %name, "lease taken over by another replica");
                        lost.cancel();
                    }
                }
            }
        }
        Ok(())
    }
}

/// The ids of replicas whose heartbeat lease is live.
pub(super) async fn alive_workers(link: &RedisLink) -> Result<Vec<String>, ClusterError> {
    let mut c = link.conn();
    let pattern = link.lease_key(&format!("{WORKER_PREFIX}*"));
    let mut cursor: u64 = 0;
    let mut keys: Vec<String> = Vec::new();
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(500)
            .query_async(&mut c)
            .await
            .map_err(unavailable)?;
        keys.extend(batch);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    let prefix = link.lease_key(WORKER_PREFIX);
    Ok(keys.into_iter().filter_map(|k| k.strip_prefix(&prefix).map(str::to_string)).collect())
}
