//! The Redis connection of a replica: one multiplexed, self-reconnecting connection with a
//! response timeout for commands, and fresh connections for the bus (pub/sub has no timeout).
//! Every key and channel starts with `[redis] prefix`. It must never log the URL (it may carry
//! a password).

use super::error::{unavailable, ClusterError};
use crate::config::RedisConfig;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use std::time::Duration;

/// Commands that take longer than this fail (and the lease logic treats Redis as away).
const RESPONSE_TIMEOUT: Duration = Duration::from_millis(1000);
const CONNECT_TIMEOUT: Duration = Duration::from_millis(1000);

#[derive(Clone)]
pub struct RedisLink {
    client: redis::Client,
    conn: ConnectionManager,
    prefix: String,
}

impl RedisLink {
    pub(super) async fn connect(cfg: &RedisConfig) -> Result<Self, ClusterError> {
        let client = redis::Client::open(cfg.url.expose())
            .map_err(|e| ClusterError::Unavailable(format!("[redis] url is not usable: {:?}", e.kind())))?;
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(RESPONSE_TIMEOUT))
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_max_delay(Duration::from_millis(1000))
            .set_number_of_retries(2);
        let conn = tokio::time::timeout(Duration::from_secs(5), client.get_connection_manager_with_config(config))
            .await
            .map_err(|_| ClusterError::Unavailable("no answer within 5s".into()))?
            .map_err(unavailable)?;
        Ok(Self { client, conn, prefix: cfg.prefix.clone() })
    }

    /// A clone of the shared connection (cheap; commands are multiplexed).
    pub fn conn(&self) -> ConnectionManager {
        self.conn.clone()
    }

    /// `<prefix>:<rest>`.
    pub fn key(&self, rest: &str) -> String {
        format!("{}:{rest}", self.prefix)
    }

    pub(super) fn client(&self) -> &redis::Client {
        &self.client
    }

    pub(super) async fn ping(&self) -> Result<(), ClusterError> {
        let mut c = self.conn();
        redis::cmd("PING").query_async::<String>(&mut c).await.map(|_| ()).map_err(unavailable)
    }

    pub(super) async fn get(&self, key: &str) -> Result<Option<String>, ClusterError> {
        let mut c = self.conn();
        redis::cmd("GET").arg(key).query_async(&mut c).await.map_err(unavailable)
    }

    /// Whether Redis lost its data since the last call (a restart without persistence): sets
    /// `<prefix>:epoch` if it is missing and says whether it was.
    pub(super) async fn lost_data(&self) -> Result<bool, ClusterError> {
        let mut c = self.conn();
        let set: Option<String> =
            redis::cmd("SET").arg(self.key("epoch")).arg(1).arg("NX").query_async(&mut c).await.map_err(unavailable)?;
        Ok(set.is_some())
    }

    /// The key of lease `name`.
    pub(super) fn lease_key(&self, name: &str) -> String {
        self.key(&format!("lease:{name}"))
    }
}
