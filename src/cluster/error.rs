//! The one error of the cluster boundary. It must never carry a Redis URL (it may hold a
//! password).

/// What callers of the cluster act on.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// Redis cannot be reached now: take no new lease, keep what is held, try again later.
    #[error("redis is unavailable: {0}")]
    Unavailable(String),
}

/// A Redis error as [`ClusterError::Unavailable`], by kind and detail (never the URL).
pub(super) fn unavailable(e: redis::RedisError) -> ClusterError {
    ClusterError::Unavailable(format!("{:?}: {}", e.kind(), e.detail().unwrap_or("no detail")))
}
