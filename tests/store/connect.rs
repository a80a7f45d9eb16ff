//! Connecting and migrating: the `Store` basics on both backends, and URL handling that does not
//! need a database (bad schemes, unreachable servers, never echoing a password).

use butler::store::{Backend, Store, StoreError};
use std::sync::Arc;

/// Migrations are idempotent, `ping` answers, and the backend is the one the URL named.
pub async fn basics(store: Arc<dyn Store>) {
    store.migrate().await.expect("second migrate is a no-op");
    store.ping().await.expect("ping");
    assert!(matches!(store.backend(), Backend::Sqlite | Backend::Postgres));
}

#[tokio::test]
async fn urls_pick_the_backend_and_errors_hide_passwords() {
    let db = crate::support::db::SqliteTestDb::new();
    let store = butler::store::connect(&db.url, 2).await.expect("sqlite");
    assert_eq!(store.backend(), Backend::Sqlite);
    assert!(db.dir.path().join("data/butler.db").exists(), "parent directory and file are created");
    store.close().await;

    let cases: &[(&str, &str)] =
        &[("mysql://bob:hunter2@localhost/db", "config"), ("postgres://bob:hunter2@127.0.0.1:1/db", "unavailable")];
    for (url, want) in cases {
        let err = match butler::store::connect(url, 1).await {
            Ok(_) => panic!("{url}: connected"),
            Err(e) => e,
        };
        let kind = match &err {
            StoreError::Config(_) => "config",
            StoreError::Unavailable(_) => "unavailable",
            other => panic!("{url}: unexpected {other:?}"),
        };
        assert_eq!(kind, *want, "{url}: {err}");
        assert!(!err.to_string().contains("hunter2"), "{url}: password leaked in `{err}`");
    }
}

#[tokio::test]
async fn in_memory_sqlite_keeps_its_data_across_calls() {
    let store = butler::store::connect("sqlite::memory:", 4).await.expect("memory");
    store.migrate().await.expect("migrate");
    let ev = crate::fixtures::event("mem:1", "web", "c1");
    assert!(store.inbox_insert(&ev).await.unwrap());
    assert!(store.inbox_get("mem:1").await.unwrap().is_some());
    store.close().await;
}

/// A missing role or database on a real Postgres is a config error that says how to create
/// them, with the names from the URL and never its password.
#[tokio::test]
async fn a_missing_role_or_database_says_how_to_create_it() {
    let admin = crate::support::db::pg_admin_url();
    let nodb = crate::support::db::with_database(&admin, "butler_no_such_db_4242");
    let host = admin.rsplit('@').next().unwrap_or("127.0.0.1:5432/postgres").split('/').next().unwrap().to_string();
    let norole = format!("postgres://nobody_4242:hunter2@{host}/butler_no_such_db_4242");
    // (url, the names the hint must carry)
    let cases = [(nodb, "--owner postgres butler_no_such_db_4242"), (norole, "createuser --pwprompt nobody_4242")];
    for (url, want) in cases {
        let err = match butler::store::connect(&url, 1).await {
            Ok(_) => panic!("{url}: connected"),
            Err(e) => e,
        };
        let text = err.to_string();
        assert!(matches!(err, StoreError::Config(_)), "{text}");
        assert!(text.contains("create them: `sudo -u postgres createuser") && text.contains(want), "{text}");
        assert!(!text.contains("hunter2"), "password leaked: {text}");
    }
}
