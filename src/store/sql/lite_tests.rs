//! The SQLite writer (`lite.rs`): group commits, operations on the caller's thread,
//! checkpoints.

use super::*;

fn lite() -> (tempfile::TempDir, Lite) {
    let (dir, path) = wal_db("t (k TEXT PRIMARY KEY, v INTEGER); INSERT INTO t VALUES ('dup', -1)");
    (dir, Lite::open(&path).unwrap())
}

/// A WAL database in a fresh folder made by `CREATE TABLE {table}` (what follows may add rows).
fn wal_db(table: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.db");
    let c = Connection::open(&path).unwrap();
    c.execute_batch(&format!("PRAGMA journal_mode = WAL; CREATE TABLE {table}")).unwrap();
    (dir, path)
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

/// An operation that finds the writer free runs on its caller's thread; one that finds it
/// busy waits for the writer thread, which runs it once the connection is free.
#[tokio::test]
async fn a_free_writer_runs_the_operation_here_and_a_busy_one_queues_it() {
    let (_dir, lite) = lite();
    let here = std::thread::current().id();
    let ran_on = lite.run(|_| Ok(std::thread::current().id())).await.unwrap();
    assert_eq!(ran_on, here);
    let read = lite.read_here(|c| query_one(c, "SELECT v FROM t WHERE k = $1", &[&"dup"], |r| r.get::<_, i64>(0)));
    assert!(matches!(read, Some(Ok(Some(-1)))), "a quiet writer's free connection was not read here");

    // Another thread holds the connection until told: the operation must go to the queue.
    let release = lite.hold_elsewhere();
    let op = lite.run(|c| {
        execute(c, "INSERT INTO t (k, v) VALUES ($1, $2)", &[&"queued", &1])?;
        Ok(std::thread::current().name().map(str::to_string))
    });
    let released = async {
        tokio::task::yield_now().await;
        drop(release);
    };
    let (name, ()) = tokio::join!(op, released);
    assert_eq!(name.unwrap().as_deref(), Some("butler-sqlite-writer"));
    // A read declines a busy connection (the caller reads through its pool).
    let release = lite.hold_elsewhere();
    assert!(lite
        .read_here(|c| query_one(c, "SELECT v FROM t WHERE k = $1", &[&"queued"], |r| r.get::<_, i64>(0)))
        .is_none());
    drop(release);
    lite.close().await;
}

/// A database another connection holds is never waited for on the caller's thread: the
/// attempt gives up at once (the operation then goes to the writer thread, which waits).
#[test]
fn a_locked_database_is_not_waited_for_here() {
    let (_dir, path) = wal_db("t (k TEXT)");
    let writer = connect(&path).unwrap();
    let other = Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    assert!(!begin_now(&writer.conn).unwrap(), "began while another connection held the database");
    other.execute_batch("COMMIT").unwrap();
    assert!(begin_now(&writer.conn).unwrap());
    exec(&writer.conn, "COMMIT").unwrap();
}

/// The writer never checkpoints on its own (that would run on whichever thread committed);
/// its thread copies the WAL into the database once a commit on a caller's thread grows it
/// past its size.
#[tokio::test]
async fn the_writer_thread_checkpoints_what_callers_commit() {
    let (_dir, path) = wal_db("b (v BLOB)");
    let lite = Lite::open_with(&path, 50).unwrap();
    let auto: i64 =
        lite.run(|c| c.pragma_query_value(None, "wal_autocheckpoint", |r| r.get(0)).map_err(lite_err)).await.unwrap();
    assert_eq!(auto, 0, "the writer checkpoints its own commits");
    let before = std::fs::metadata(&path).unwrap().len();
    for _ in 0..10 {
        lite.run(|c| {
            for _ in 0..20 {
                execute(c, "INSERT INTO b (v) VALUES (zeroblob(3000))", &[])?;
            }
            Ok(())
        })
        .await
        .unwrap();
    }
    // 200 rows of about a page each: the database file holds them once they are checkpointed.
    let mut waited = 0;
    while std::fs::metadata(&path).unwrap().len() < before + 150 * 4096 {
        assert!(waited < 600, "no checkpoint after {waited} waits");
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += 1;
    }
    lite.close().await;
}

/// Bytes of page cache a connection holds (`SQLITE_DBSTATUS_CACHE_USED`).
fn cache_used(c: &Connection) -> i32 {
    let (mut now, mut peak) = (0, 0);
    // SAFETY: the handle is `c`'s, alive for the call; both out-pointers are valid.
    let rc = unsafe {
        libsqlite3_sys::sqlite3_db_status(
            c.handle(),
            libsqlite3_sys::SQLITE_DBSTATUS_CACHE_USED,
            &mut now,
            &mut peak,
            0,
        )
    };
    assert_eq!(rc, libsqlite3_sys::SQLITE_OK);
    now
}

/// What a burst read into the writer's page cache is given back when Butler goes idle (the
/// session trim calls this), and the connection reads on as before.
#[test]
fn page_caches_are_given_back() {
    let (_dir, path) = wal_db("b (v BLOB)");
    let writer = connect(&path).unwrap();
    exec(&writer.conn, "BEGIN").unwrap();
    for _ in 0..300 {
        execute(&writer.conn, "INSERT INTO b (v) VALUES (zeroblob(3000))", &[]).unwrap();
    }
    exec(&writer.conn, "COMMIT").unwrap();
    let scan = |c: &Connection| -> i64 { c.query_row("SELECT SUM(LENGTH(v)) FROM b", [], |r| r.get(0)).unwrap() };
    assert_eq!(scan(&writer.conn), 900_000);
    let before = cache_used(&writer.conn);
    assert!(before > 600_000, "the scan cached only {before} bytes");
    let freed = crate::store::SqliteStore::release_page_caches();
    let after = cache_used(&writer.conn);
    assert!(after < 64 * 1024, "{after} bytes still cached ({before} before, {freed} freed)");
    assert_eq!(scan(&writer.conn), 900_000);
}
