//! The SQLite writer ([`Lite`]): one write connection to the database (rusqlite, over the same
//! libsqlite3 that sqlx links) that runs whole store operations, each in a transaction of its
//! own when the connection is free, or queued to the writer thread, which commits everything
//! that waited meanwhile in one transaction (group commit), each operation inside its own
//! savepoint. The thread also checkpoints the WAL, never a caller's thread.
//!
//! Why: sqlx's SQLite driver runs every statement on a worker thread and sends each row back
//! through a channel, so a five-statement transaction costs a dozen thread hand-offs; a turn's
//! writes were half its CPU in the kernel. Here an operation that finds the connection free
//! runs on the caller's own thread (no hand-off at all: a turn's seven writes each cost a
//! thread wake-up there and one back); a busy moment queues, and one commit holds many turns.
//!
//! Durability is unchanged: a caller hears of its operation only after the COMMIT that holds it
//! (an operation that failed rolls back to its savepoint and never touches the others). It must
//! never run anything on the connection but short statements (no I/O, no waiting on async code),
//! never wait for a lock on a caller's thread (a locked database sends the operation to the
//! writer thread, which may wait), never checkpoint on a caller's thread, and never answer an
//! operation before its transaction has committed.

use super::error::lite_err;
use crate::store::{Result, StoreError};
use rusqlite::{Connection, ToSql};
use std::os::raw::{c_char, c_int, c_void};
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// How many operations wait for the thread at most; senders beyond wait their turn.
const QUEUE: usize = 256;
/// The most operations one transaction commits.
const GROUP: usize = 64;
/// Prepared statements kept per connection (every hot statement, with room to spare).
const STATEMENTS: usize = 64;
/// How long the writer thread waits for a database another connection holds.
const BUSY: Duration = Duration::from_secs(5);
/// For how long after an operation went to the writer thread the others follow it there (in
/// nanoseconds): on a busy writer one commit of many operations costs less than each their
/// own; on a quiet one an operation costs less where it is (README, "Where a turn's CPU goes").
const BUSY_FOR: u64 = 2_000_000;
/// WAL frames after which the WAL is checkpointed (SQLite's default is 1,000, a 4 MiB WAL). A
/// checkpoint copies every page the WAL holds into the database and syncs both files, so a
/// turn's pages that change again and again (the inbox's, the outbox's, their indexes') are
/// copied once per checkpoint: at 4,000 (a WAL of about 16 MiB, reused after each checkpoint) a
/// turn cost 7-10% less CPU at 64 conversations (README, "Where a turn's CPU goes"). The
/// writer's checkpoints run on its thread (`serve`); sqlx's writer checkpoints its own
/// commits at the same size (`sqlite.rs`).
pub(crate) const WAL_CHECKPOINT_PAGES: i32 = 4000;

/// One operation in flight: run inside the open transaction, then answered once it commits.
trait Work: Send {
    /// Runs the operation; what it produced waits for [`Work::answer`].
    fn run(&mut self, conn: &Connection);
    /// Whether the operation failed (its savepoint is then rolled back).
    fn failed(&self) -> bool;
    /// Sends the outcome, or `err` when the transaction holding it did not commit.
    fn answer(self: Box<Self>, err: Option<&StoreError>);
}

struct Pending<T, F> {
    op: Option<F>,
    out: Option<Result<T>>,
    reply: oneshot::Sender<Result<T>>,
}

/// Runs `op`, a panic turned into an error.
fn guarded<T>(op: impl FnOnce(&Connection) -> Result<T>, conn: &Connection) -> Result<T> {
    std::panic::catch_unwind(AssertUnwindSafe(|| op(conn)))
        .unwrap_or_else(|_| Err(StoreError::Corrupt("a SQLite write panicked".into())))
}

impl<T, F> Work for Pending<T, F>
where
    T: Send + 'static,
    F: FnOnce(&Connection) -> Result<T> + Send + 'static,
{
    fn run(&mut self, conn: &Connection) {
        if let Some(op) = self.op.take() {
            self.out = Some(guarded(op, conn));
        }
    }

    fn failed(&self) -> bool {
        !matches!(self.out, Some(Ok(_)))
    }

    fn answer(self: Box<Self>, err: Option<&StoreError>) {
        let Pending { out, reply, .. } = *self;
        let out = match (err, out) {
            (Some(e), Some(Ok(_)) | None) => Err(e.clone()),
            (_, Some(out)) => out,
            (None, None) => Err(StoreError::Unavailable("the SQLite writer dropped an operation".into())),
        };
        // The caller may have gone (cancelled): the write stands, as with any committed write.
        let _ = reply.send(out);
    }
}

enum Msg {
    Work(Box<dyn Work>),
    /// A commit on a caller's thread grew the WAL past its size.
    Checkpoint,
    Stop,
}

/// The write connection and the WAL's length after its last commit, which the connection's
/// WAL hook stores. `conn` is declared first so it is closed before `frames` is freed.
struct Writer {
    conn: Connection,
    frames: Box<AtomicI32>,
}

impl Writer {
    /// Whether the WAL has grown past `pages` frames.
    fn wal_full(&self, pages: i32) -> bool {
        self.frames.load(Ordering::Relaxed) >= pages
    }

    /// Copies the WAL into the database (this connection writes nothing meanwhile: the caller
    /// holds it), so its next transaction can start the WAL over.
    fn checkpoint(&self) {
        if let Err(e) = self.conn.execute_batch("PRAGMA wal_checkpoint(PASSIVE)") {
            tracing::warn!(error = %e, "a WAL checkpoint failed; the next commit asks again");
        }
    }
}

/// What the callers and the writer thread share.
struct Shared {
    /// `None` once closed.
    writer: Mutex<Option<Writer>>,
    /// WAL frames past which the writer thread checkpoints.
    checkpoint_at: i32,
    /// When an operation last went to the writer thread ([`Shared::since`], 0: never); see
    /// [`BUSY_FOR`].
    queued_at: AtomicU64,
    /// Whether a checkpoint is asked of the writer thread and not yet done.
    checkpoint_asked: AtomicBool,
    epoch: Instant,
}

impl Shared {
    /// Nanoseconds since the writer opened.
    fn since(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// The writer's handle. Dropping it ends the thread once the queue is empty.
pub(crate) struct Lite {
    jobs: mpsc::Sender<Msg>,
    shared: Arc<Shared>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Lite {
    /// Opens a write connection to the database at `path` (already created and in WAL mode by
    /// sqlx) and starts its thread.
    pub(crate) fn open(path: &Path) -> Result<Self> {
        Self::open_with(path, WAL_CHECKPOINT_PAGES)
    }

    /// As [`Lite::open`], checkpointing past `checkpoint_at` WAL frames.
    fn open_with(path: &Path, checkpoint_at: i32) -> Result<Self> {
        let writer =
            connect(path).map_err(|e| StoreError::Unavailable(format!("cannot open the SQLite writer: {e}")))?;
        let shared = Arc::new(Shared {
            writer: Mutex::new(Some(writer)),
            checkpoint_at,
            queued_at: AtomicU64::new(0),
            checkpoint_asked: AtomicBool::new(false),
            epoch: Instant::now(),
        });
        let (jobs, rx) = mpsc::channel(QUEUE);
        let serving = shared.clone();
        let thread = std::thread::Builder::new()
            .name("butler-sqlite-writer".into())
            .spawn(move || serve(&serving, rx))
            .map_err(|e| StoreError::Unavailable(format!("cannot start the SQLite writer: {e}")))?;
        Ok(Self { jobs, shared, thread: Mutex::new(Some(thread)) })
    }

    /// Runs `op` inside a write transaction and returns its result once that transaction has
    /// committed: on the caller's thread when the writer is quiet, otherwise on the writer
    /// thread. An `Err` from `op` undoes only `op`'s own statements.
    pub(crate) async fn run<T, F>(&self, op: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let op = match self.run_here(op) {
            Ok(out) => return out,
            Err(op) => op,
        };
        self.shared.queued_at.store(self.shared.since().max(1), Ordering::Relaxed);
        let (reply, rx) = oneshot::channel();
        let work = Pending { op: Some(op), out: None, reply };
        self.jobs.send(Msg::Work(Box::new(work))).await.map_err(|_| closed())?;
        rx.await.map_err(|_| closed())?
    }

    /// Runs `op` in a transaction of its own on this thread when the writer is quiet (nothing
    /// went to its thread for [`BUSY_FOR`]), the connection is free and the database is not
    /// locked; `op` back otherwise.
    fn run_here<T, F>(&self, op: F) -> std::result::Result<Result<T>, F>
    where
        F: FnOnce(&Connection) -> Result<T>,
    {
        if !self.quiet() {
            return Err(op);
        }
        let Ok(guard) = self.shared.writer.try_lock() else { return Err(op) };
        let Some(writer) = guard.as_ref() else { return Ok(Err(closed())) };
        let conn = &writer.conn;
        match begin_now(conn) {
            Ok(true) => {}
            Ok(false) => return Err(op),
            Err(e) => return Ok(Err(e)),
        }
        let out = match guarded(op, conn) {
            Ok(v) => exec(conn, "COMMIT").map(|()| v),
            Err(e) => Err(e),
        };
        if !conn.is_autocommit() {
            let _ = exec(conn, "ROLLBACK");
        }
        let full = writer.wal_full(self.shared.checkpoint_at);
        drop(guard);
        if full && !self.shared.checkpoint_asked.swap(true, Ordering::Relaxed) {
            // A full queue is a busy thread: its own commits check the WAL too.
            if self.jobs.try_send(Msg::Checkpoint).is_err() {
                self.shared.checkpoint_asked.store(false, Ordering::Relaxed);
            }
        }
        Ok(out)
    }

    /// Runs the read `op` on this thread over the writer's connection (outside any transaction:
    /// it sees what is committed) when the writer is quiet and its connection free; `None`
    /// otherwise, and the caller reads through its pool. The writer's page cache is the one that
    /// stays warm (another connection's commits empty a reader's), and a read here costs no
    /// thread hand-off. Short indexed reads only: the writer waits for it.
    pub(crate) fn read_here<T>(&self, op: impl FnOnce(&Connection) -> Result<T>) -> Option<Result<T>> {
        if !self.quiet() {
            return None;
        }
        let guard = self.shared.writer.try_lock().ok()?;
        let writer = guard.as_ref()?;
        Some(guarded(op, &writer.conn))
    }

    /// Whether nothing went to the writer thread for [`BUSY_FOR`] and nothing waits for it.
    fn quiet(&self) -> bool {
        let queued_at = self.shared.queued_at.load(Ordering::Relaxed);
        (queued_at == 0 || self.shared.since().saturating_sub(queued_at) > BUSY_FOR) && self.jobs.capacity() == QUEUE
    }

    /// Holds the writer's connection on another thread until the returned sender is dropped
    /// (tests of what callers do when it is busy).
    #[cfg(test)]
    pub(crate) fn hold_elsewhere(&self) -> std::sync::mpsc::Sender<()> {
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let shared = self.shared.clone();
        std::thread::spawn(move || {
            let _guard = shared.writer.lock();
            let _ = held_tx.send(());
            let _ = release_rx.recv();
        });
        let _ = held_rx.recv();
        release_tx
    }

    /// Finishes what is queued, then stops the thread and closes the connection.
    pub(crate) async fn close(&self) {
        let _ = self.jobs.send(Msg::Stop).await;
        let thread = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        let shared = self.shared.clone();
        let _ = tokio::task::spawn_blocking(move || {
            if let Some(thread) = thread {
                let _ = thread.join();
            }
            drop(shared.writer.lock().unwrap_or_else(|p| p.into_inner()).take());
        })
        .await;
    }
}

fn closed() -> StoreError {
    StoreError::Unavailable("the SQLite writer is closed".into())
}

/// `BEGIN IMMEDIATE` without waiting: `false` when another connection holds the database (the
/// busy timeout is back at [`BUSY`] either way).
fn begin_now(conn: &Connection) -> Result<bool> {
    conn.busy_timeout(Duration::ZERO).map_err(lite_err)?;
    let begun = conn.prepare_cached("BEGIN IMMEDIATE").and_then(|mut s| s.execute([]));
    conn.busy_timeout(BUSY).map_err(lite_err)?;
    match begun {
        Ok(_) => Ok(true),
        Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == rusqlite::ErrorCode::DatabaseBusy => Ok(false),
        Err(e) => Err(lite_err(e)),
    }
}

/// The WAL hook: stores the WAL's length in frames after each commit (instead of SQLite's
/// automatic checkpoint, which would run on whichever thread committed).
unsafe extern "C" fn wal_frames(
    arg: *mut c_void,
    _db: *mut libsqlite3_sys::sqlite3,
    _name: *const c_char,
    frames: c_int,
) -> c_int {
    // SAFETY: `arg` is the `frames` of the `Writer` that owns this connection, freed after it.
    unsafe { (*(arg as *const AtomicI32)).store(frames, Ordering::Relaxed) };
    libsqlite3_sys::SQLITE_OK
}

fn connect(path: &Path) -> rusqlite::Result<Writer> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(BUSY)?;
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")?;
    conn.set_prepared_statement_cache_capacity(STATEMENTS);
    let frames = Box::new(AtomicI32::new(0));
    // SAFETY: the handle is this connection's, not in use elsewhere yet; `frames` outlives the
    // connection (`Writer` drops `conn` first). QPSG takes an int and an optional int pointer
    // (see `sqlite::stable_plans`, the same for sqlx's).
    let rc = unsafe {
        libsqlite3_sys::sqlite3_wal_hook(conn.handle(), Some(wal_frames), &*frames as *const AtomicI32 as *mut c_void);
        libsqlite3_sys::sqlite3_db_config(
            conn.handle(),
            libsqlite3_sys::SQLITE_DBCONFIG_ENABLE_QPSG,
            1 as c_int,
            std::ptr::null_mut::<c_int>(),
        )
    };
    if rc != libsqlite3_sys::SQLITE_OK {
        return Err(rusqlite::Error::SqliteFailure(libsqlite3_sys::Error::new(rc), None));
    }
    Ok(Writer { conn, frames })
}

/// The thread: takes what is queued (up to [`GROUP`]), runs it in one transaction, commits,
/// checkpoints when the WAL is full, answers; until told to stop or every handle is gone.
fn serve(shared: &Shared, mut rx: mpsc::Receiver<Msg>) {
    let mut group: Vec<Box<dyn Work>> = Vec::with_capacity(GROUP);
    let mut stop = false;
    while !stop {
        match rx.blocking_recv() {
            Some(Msg::Work(w)) => group.push(w),
            Some(Msg::Checkpoint) => {}
            Some(Msg::Stop) | None => break,
        }
        while group.len() < GROUP {
            match rx.try_recv() {
                Ok(Msg::Work(w)) => group.push(w),
                Ok(Msg::Checkpoint) => {}
                Ok(Msg::Stop) => {
                    stop = true;
                    break;
                }
                Err(_) => break,
            }
        }
        let err = {
            let guard = shared.writer.lock().unwrap_or_else(|p| p.into_inner());
            match guard.as_ref() {
                Some(w) => {
                    let err = if group.is_empty() { None } else { commit_group(&w.conn, &mut group).err() };
                    shared.checkpoint_asked.store(false, Ordering::Relaxed);
                    if w.wal_full(shared.checkpoint_at) {
                        w.checkpoint();
                    }
                    err
                }
                None => Some(closed()),
            }
        };
        for w in group.drain(..) {
            w.answer(err.as_ref());
        }
    }
}

/// Runs `group` in one `BEGIN IMMEDIATE ... COMMIT`. One operation alone needs no savepoint
/// (its failure rolls the whole transaction back); several each get one. Whatever fails, the
/// connection is left with no transaction open.
fn commit_group(conn: &Connection, group: &mut [Box<dyn Work>]) -> Result<()> {
    exec(conn, "BEGIN IMMEDIATE")?;
    let result = match group {
        [only] => {
            only.run(conn);
            // A failed operation is rolled back below, with its own error answered.
            if only.failed() {
                Ok(())
            } else {
                exec(conn, "COMMIT")
            }
        }
        _ => run_each(conn, group).and_then(|()| exec(conn, "COMMIT")),
    };
    if !conn.is_autocommit() {
        let _ = exec(conn, "ROLLBACK");
    }
    result
}

fn run_each(conn: &Connection, group: &mut [Box<dyn Work>]) -> Result<()> {
    for w in group.iter_mut() {
        exec(conn, "SAVEPOINT op")?;
        w.run(conn);
        if w.failed() {
            exec(conn, "ROLLBACK TO op")?;
        }
        exec(conn, "RELEASE op")?;
    }
    Ok(())
}

fn exec(conn: &Connection, sql: &str) -> Result<()> {
    conn.prepare_cached(sql).and_then(|mut s| s.execute([])).map(|_| ()).map_err(lite_err)
}

/// `$1`, `$2`, ... as SQLite names them.
const NAMES: [&str; 24] = [
    "$1", "$2", "$3", "$4", "$5", "$6", "$7", "$8", "$9", "$10", "$11", "$12", "$13", "$14", "$15", "$16", "$17",
    "$18", "$19", "$20", "$21", "$22", "$23", "$24",
];

/// The statement `sql` (prepared once per connection) with `values` bound as `$1`, `$2`, ...
/// by name: SQLite numbers named parameters by first use, so positions would not match the
/// `$N` the statements share with Postgres.
pub(crate) fn prepare<'c>(
    conn: &'c Connection,
    sql: &str,
    values: &[&dyn ToSql],
) -> rusqlite::Result<rusqlite::CachedStatement<'c>> {
    let mut stmt = conn.prepare_cached(sql)?;
    for (name, value) in NAMES.iter().zip(values) {
        if let Some(i) = stmt.parameter_index(name)? {
            stmt.raw_bind_parameter(i, value)?;
        }
    }
    Ok(stmt)
}

/// Runs `sql` with `values`; the number of rows changed.
pub(crate) fn execute(conn: &Connection, sql: &str, values: &[&dyn ToSql]) -> Result<usize> {
    prepare(conn, sql, values).and_then(|mut s| s.raw_execute()).map_err(lite_err)
}

/// Runs `sql`, whose parameters are `?`s numbered by position, with `values`; the number of
/// rows changed.
pub(crate) fn execute_positional(conn: &Connection, sql: &str, values: &[&dyn ToSql]) -> Result<usize> {
    let mut stmt = conn.prepare_cached(sql).map_err(lite_err)?;
    for (i, value) in values.iter().enumerate() {
        stmt.raw_bind_parameter(i + 1, value).map_err(lite_err)?;
    }
    stmt.raw_execute().map_err(lite_err)
}

/// Runs `sql` with `values` and decodes every row it returns with `row`.
pub(crate) fn query<T>(
    conn: &Connection,
    sql: &str,
    values: &[&dyn ToSql],
    mut row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>> {
    let mut stmt = prepare(conn, sql, values).map_err(lite_err)?;
    let mut rows = stmt.raw_query();
    let mut out = Vec::new();
    while let Some(r) = rows.next().map_err(lite_err)? {
        out.push(row(r).map_err(lite_err)?);
    }
    Ok(out)
}

/// As [`query`], the first row only (every row is still stepped through, so a RETURNING
/// statement finishes its work).
pub(crate) fn query_one<T>(
    conn: &Connection,
    sql: &str,
    values: &[&dyn ToSql],
    row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> Result<Option<T>> {
    Ok(query(conn, sql, values, row)?.into_iter().next())
}

#[cfg(test)]
#[path = "lite_tests.rs"]
mod tests;
