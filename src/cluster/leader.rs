//! Leader leases: what must run in one place at a time (a long-polling receiver, a gateway,
//! the reaper) runs on the replica holding its lease, and moves when that replica dies.

use super::members::Cluster;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Runs `task` while this replica holds the lease `name`, and again whenever it wins it back,
/// until `cancel` fires. The task gets a token that fires when the lease is lost (or at
/// `cancel`); it must stop then. A task that ends by itself is started again after a pause.
pub async fn run_as_leader<F, Fut>(cluster: Arc<Cluster>, name: String, cancel: CancellationToken, mut task: F)
where
    F: FnMut(CancellationToken) -> Fut,
    Fut: Future<Output = ()>,
{
    let retry = (cluster.lease_ttl() / 3).max(Duration::from_millis(200));
    loop {
        if cancel.is_cancelled() {
            return;
        }
        match cluster.acquire(&name).await {
            Ok(Some(lease)) => {
                tracing::info!(lease = %name, worker = cluster.worker(), "leader lease held");
                crate::metrics::METRICS.leader_acquired.inc();
                let stop = cancel.child_token();
                let run = task(stop.clone());
                tokio::pin!(run);
                tokio::select! {
                    _ = &mut run => {}
                    _ = lease.lost.cancelled() => {
                        stop.cancel();
                        run.await;
                    }
                }
                if lease.lost.is_cancelled() {
                    tracing::warn!(lease = %name, "leader lease lost; stopped");
                } else {
                    cluster.release(&name).await;
                    if !cancel.is_cancelled() {
                        tracing::warn!(lease = %name, "leader task ended; starting it again");
                    }
                }
            }
            Ok(None) => {}
            Err(e) => tracing::debug!(lease = %name, error = %e, "cannot take the leader lease now"),
        }
        tokio::select! {
            _ = tokio::time::sleep(retry) => {}
            _ = cancel.cancelled() => return,
        }
    }
}
