//! Several replicas on one Postgres and one Redis. (Issue 18; the lead's leases, bus and
//! leader loop land here too.) This branch adds the shared rate gate.
//! Nothing here may hold a lock across an await, read or write the database, or import a
//! component above it.

mod gate;

pub use gate::RedisGate;
