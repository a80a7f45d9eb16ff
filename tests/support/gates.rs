//! Rate gates for tests: "replicas" that share one Redis (127.0.0.1:6379) through gates of
//! their own (each with its own connection, as separate processes would have), under a key
//! prefix unique to the test, so tests running in parallel never see each other's keys.
//!
//! It must never touch a key outside the prefix it made.

use butler::channel::limit::Gate;
use butler::cluster::RedisGate;
use redis::aio::ConnectionManager;
use std::sync::Arc;

pub const REDIS_URL: &str = "redis://127.0.0.1:6379";

/// A fresh connection to the test Redis.
pub async fn connect() -> ConnectionManager {
    redis::Client::open(REDIS_URL).unwrap().get_connection_manager().await.expect("Redis on 127.0.0.1:6379")
}

/// A key prefix no other test uses.
pub fn prefix() -> String {
    format!("butler-test-{}:gate:", uuid::Uuid::new_v4().simple())
}

/// `n` gates over one Redis and one fresh prefix: what `n` replicas would hold.
pub async fn replicas(n: usize) -> (Vec<Gate>, String) {
    let prefix = prefix();
    let mut gates = Vec::new();
    for _ in 0..n {
        gates.push(Gate::shared(Arc::new(RedisGate::new(connect().await, prefix.clone()))));
    }
    (gates, prefix)
}

/// The keys under `prefix` now.
pub async fn keys(prefix: &str) -> Vec<String> {
    let mut c = connect().await;
    redis::cmd("KEYS").arg(format!("{prefix}*")).query_async(&mut c).await.unwrap()
}
