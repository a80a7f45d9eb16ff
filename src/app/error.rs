//! Why Butler could not start: each variant names what the operator must fix. It must never
//! carry a secret (URLs are redacted by the errors it wraps).

use crate::store::StoreError;

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
    #[error(transparent)]
    Secrets(#[from] crate::secrets::SecretsError),
    #[error("{0}; start Redis or fix [redis] url (or remove [redis] to run one process)")]
    Redis(crate::cluster::ClusterError),
    /// The config asks for replicas in a way that cannot work.
    #[error("{0}")]
    Replicas(String),
}
