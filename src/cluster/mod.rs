//! Several replicas on one Postgres and one Redis: leases (sessions, receivers, each replica's
//! heartbeat), a bus that wakes the replica owning a session and fans web events out, and the
//! leader loop for what must run in one place at a time, and the rate gate the replicas share
//! (platform limits, webhook sources, refusals, lockouts).
//!
//! Postgres stays the truth: a lease only says who should do the work; the store's fencing
//! token (see [`crate::store::ReplicaStore`]) decides whose commit counts. Without `[redis]`
//! the cluster is this one process: every lease is granted at once and nothing touches the
//! network. Nothing here may hold a lock across an await, read or write the database, or
//! import a component above it.

mod bus;
mod error;
mod gate;
mod leader;
mod lease;
mod link;
mod members;

pub use bus::{BusMessage, Topic};
pub use error::ClusterError;
pub use gate::RedisGate;
pub use leader::run_as_leader;
pub use lease::Lease;
pub use link::RedisLink;
pub use members::Cluster;
