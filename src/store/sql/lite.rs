//! The SQLite writer thread ([`Lite`]): one thread owns a write connection to the database
//! (rusqlite, over the same libsqlite3 that sqlx links) and runs whole store operations handed
//! to it over a bounded queue, all the operations waiting at that moment in one transaction
//! (group commit), each inside its own savepoint.
//!
//! Why: sqlx's SQLite driver runs every statement on a worker thread and sends each row back
//! through a channel, so a five-statement transaction costs a dozen thread hand-offs; a turn's
//! writes were half its CPU in the kernel. Here a whole operation costs one hand-off there and
//! one back, and a busy moment commits many turns at once.
//!
//! Durability is unchanged: a caller hears of its operation only after the COMMIT that holds it
//! (an operation that failed rolls back to its savepoint and never touches the others). It must
//! never run anything on its thread but short statements (no I/O, no waiting on async code),
//! and never answer an operation before its transaction has committed.

use super::error::lite_err;
use crate::store::{Result, StoreError};
use rusqlite::{Connection, ToSql};
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// How many operations wait for the thread at most; senders beyond wait their turn.
const QUEUE: usize = 256;
/// The most operations one transaction commits.
const GROUP: usize = 64;
/// Prepared statements kept per connection (every hot statement, with room to spare).
const STATEMENTS: usize = 64;
/// WAL frames after which a commit checkpoints (`PRAGMA wal_autocheckpoint`; SQLite's default
/// is 1,000, a 4 MiB WAL). A checkpoint copies every page the WAL holds into the database and
/// syncs both files, so a turn's pages that change again and again (the inbox's, the outbox's,
/// their indexes') are copied once per checkpoint: at 4,000 (a WAL of about 16 MiB, reused after
/// each checkpoint) a turn cost 7-10% less CPU at 64 conversations (README, "Where a turn's CPU
/// goes"). Every connection that writes sets it (sqlx's writer too, `sqlite.rs`).
pub(crate) const WAL_CHECKPOINT_PAGES: i64 = 4000;

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

impl<T, F> Work for Pending<T, F>
where
    T: Send + 'static,
    F: FnOnce(&Connection) -> Result<T> + Send + 'static,
{
    fn run(&mut self, conn: &Connection) {
        if let Some(op) = self.op.take() {
            let out = std::panic::catch_unwind(AssertUnwindSafe(|| op(conn)))
                .unwrap_or_else(|_| Err(StoreError::Corrupt("a SQLite write panicked".into())));
            self.out = Some(out);
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
    Stop,
}

/// The writer thread's handle. Dropping it ends the thread once the queue is empty.
pub(crate) struct Lite {
    jobs: mpsc::Sender<Msg>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Lite {
    /// Opens a write connection to the database at `path` (already created and in WAL mode by
    /// sqlx) and starts its thread.
    pub(crate) fn open(path: &Path) -> Result<Self> {
        let conn = connect(path).map_err(|e| StoreError::Unavailable(format!("cannot open the SQLite writer: {e}")))?;
        let (jobs, rx) = mpsc::channel(QUEUE);
        let thread = std::thread::Builder::new()
            .name("butler-sqlite-writer".into())
            .spawn(move || serve(conn, rx))
            .map_err(|e| StoreError::Unavailable(format!("cannot start the SQLite writer: {e}")))?;
        Ok(Self { jobs, thread: Mutex::new(Some(thread)) })
    }

    /// Runs `op` on the writer thread inside a write transaction and returns its result once
    /// that transaction has committed. An `Err` from `op` undoes only `op`'s own statements.
    pub(crate) async fn run<T, F>(&self, op: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let (reply, rx) = oneshot::channel();
        let work = Pending { op: Some(op), out: None, reply };
        self.jobs.send(Msg::Work(Box::new(work))).await.map_err(|_| closed())?;
        rx.await.map_err(|_| closed())?
    }

    /// Finishes what is queued, then stops the thread and closes its connection.
    pub(crate) async fn close(&self) {
        let _ = self.jobs.send(Msg::Stop).await;
        let thread = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(thread) = thread {
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
    }
}

fn closed() -> StoreError {
    StoreError::Unavailable("the SQLite writer is closed".into())
}

fn connect(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")?;
    conn.set_prepared_statement_cache_capacity(STATEMENTS);
    conn.pragma_update(None, "wal_autocheckpoint", WAL_CHECKPOINT_PAGES)?;
    // SAFETY: the handle is this connection's, used on this thread only; the option takes an
    // int and an optional int pointer (see `sqlite::stable_plans`, the same for sqlx's).
    let rc = unsafe {
        libsqlite3_sys::sqlite3_db_config(
            conn.handle(),
            libsqlite3_sys::SQLITE_DBCONFIG_ENABLE_QPSG,
            1 as std::os::raw::c_int,
            std::ptr::null_mut::<std::os::raw::c_int>(),
        )
    };
    if rc != libsqlite3_sys::SQLITE_OK {
        return Err(rusqlite::Error::SqliteFailure(libsqlite3_sys::Error::new(rc), None));
    }
    Ok(conn)
}

/// The thread: takes what is queued (up to [`GROUP`]), runs it in one transaction, commits,
/// answers; until told to stop or every handle is gone.
fn serve(conn: Connection, mut rx: mpsc::Receiver<Msg>) {
    let mut group: Vec<Box<dyn Work>> = Vec::with_capacity(GROUP);
    let mut stop = false;
    while !stop {
        match rx.blocking_recv() {
            Some(Msg::Work(w)) => group.push(w),
            Some(Msg::Stop) | None => break,
        }
        while group.len() < GROUP {
            match rx.try_recv() {
                Ok(Msg::Work(w)) => group.push(w),
                Ok(Msg::Stop) => {
                    stop = true;
                    break;
                }
                Err(_) => break,
            }
        }
        let err = commit_group(&conn, &mut group).err();
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
mod tests {
    use super::*;

    fn lite() -> (tempfile::TempDir, Lite) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        let c = Connection::open(&path).unwrap();
        c.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER); INSERT INTO t VALUES ('dup', -1)")
            .unwrap();
        drop(c);
        (dir, Lite::open(&path).unwrap())
    }

    fn count(path: &Path) -> i64 {
        let c = Connection::open(path).unwrap();
        c.query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0)).unwrap()
    }

    /// Operations queued together commit together; one that fails leaves no trace and the
    /// others stand; every caller hears only after its commit.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn operations_commit_in_groups_and_a_failed_one_undoes_only_itself() {
        let (dir, lite) = lite();
        let lite = std::sync::Arc::new(lite);
        let mut tasks = tokio::task::JoinSet::new();
        for n in 0..200i64 {
            let lite = lite.clone();
            tasks.spawn(async move {
                lite.run(move |c| {
                    execute(c, "INSERT INTO t (k, v) VALUES ($1, $2)", &[&format!("k{n}"), &n])?;
                    if n % 10 == 0 {
                        // The second statement of a failing operation: its first must go too.
                        execute(c, "INSERT INTO t (k, v) VALUES ($1, $2)", &[&"dup", &n])?;
                    }
                    Ok(n)
                })
                .await
            });
        }
        let mut ok = 0;
        let mut conflicts = 0;
        while let Some(r) = tasks.join_next().await {
            match r.unwrap() {
                Ok(_) => ok += 1,
                Err(StoreError::Conflict(_)) => conflicts += 1,
                Err(e) => panic!("unexpected {e}"),
            }
        }
        assert_eq!((ok, conflicts), (180, 20));
        assert_eq!(count(&dir.path().join("w.db")), 181);
        let got: Option<i64> = lite
            .run(|c| query_one(c, "SELECT v FROM t WHERE k = $1 AND $2 = $2", &[&"k7", &0], |r| r.get(0)))
            .await
            .unwrap();
        assert_eq!(got, Some(7));
        lite.close().await;
        assert!(matches!(lite.run(|_| Ok(())).await, Err(StoreError::Unavailable(_))));
    }

    /// Parameters bind by name, whatever order they first appear in.
    #[tokio::test]
    async fn parameters_bind_by_their_number_not_their_position() {
        let (_dir, lite) = lite();
        let got: Vec<(String, i64)> = lite
            .run(|c| {
                execute(c, "INSERT INTO t (v, k) VALUES ($2, $1)", &[&"a", &5])?;
                query(c, "SELECT k, v FROM t WHERE v = $2 AND k = $1", &[&"a", &5], |r| Ok((r.get(0)?, r.get(1)?)))
            })
            .await
            .unwrap();
        assert_eq!(got, vec![("a".to_string(), 5)]);
        lite.close().await;
    }
}
