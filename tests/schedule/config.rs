//! `[[schedules]]` in the config: validation names the key of each problem, and the jobs are put
//! into the store by name at start (edits keep the job and its pending fire time; removed
//! entries are deleted), owned by `owner` or else the first configured owner.

use crate::support::db::SqliteTestDb;
use butler::config::{parse_str, AccessConfig, Env, ScheduleConfig, ScheduleMode};
use butler::schedule::Schedules;
use butler::store::{ScheduleFilter, ScheduleSource};
use butler::triage::Access;
use std::sync::Arc;

fn parse(text: &str) -> butler::config::Config {
    parse_str(text, "config/butler.toml", &Env::from_pairs(Vec::<(String, String)>::new())).unwrap()
}

const GOOD: &str = "name = \"brief\"\ncron = \"0 8 * * 1-5\"\ntz = \"Europe/Berlin\"\nprompt = \"Brief me.\"\ntarget = \"web:briefings\"\n";

#[test]
fn validation_names_the_key() {
    let cases: &[(&str, Option<&str>)] = &[
        (GOOD, None),
        ("name = \"hb\"\ncron = \"*/30 * * * *\"\nprompt = \"Anything new?\"\ntarget = \"web:b\"\nmode = \"heartbeat\"\nmissed = \"skip\"\ngrace_secs = 60", None),
        ("name = \"b\"\ncron = \"0 8 * *\"\nprompt = \"p\"\ntarget = \"web:b\"", Some("schedules[0].cron")),
        ("name = \"b\"\ncron = \"0 0 30 2 *\"\nprompt = \"p\"\ntarget = \"web:b\"", Some("schedules[0].cron")),
        ("name = \"b\"\ncron = \"0 8 * * *\"\ntz = \"Mars/Base\"\nprompt = \"p\"\ntarget = \"web:b\"", Some("schedules[0].tz")),
        ("name = \"b\"\ncron = \"0 8 * * *\"\nprompt = \" \"\ntarget = \"web:b\"", Some("schedules[0].prompt")),
        ("name = \"\"\ncron = \"0 8 * * *\"\nprompt = \"p\"\ntarget = \"web:b\"", Some("schedules[0].name")),
        ("name = \"b\"\ncron = \"0 8 * * *\"\nprompt = \"p\"\ntarget = \"telegram:123\"", Some("schedules[0].target")),
        ("name = \"b\"\ncron = \"0 8 * * *\"\nprompt = \"p\"\ntarget = \"hook:github\"", Some("schedules[0].target")),
    ];
    for (entry, want) in cases {
        let cfg = parse(&format!("[[schedules]]\n{entry}\n"));
        match (butler::app::check_config(&cfg), want) {
            (Ok(()), None) => {}
            (Err(e), Some(key)) => assert!(e.to_string().contains(key), "{entry}: {e}"),
            (got, want) => panic!("{entry}: got {got:?}, want {want:?}"),
        }
    }
    let twice = parse(&format!("[[schedules]]\n{GOOD}\n[[schedules]]\n{GOOD}\n"));
    let e = butler::app::check_config(&twice).unwrap_err().to_string();
    assert!(e.contains("schedules[1].name") && e.contains("unique"), "{e}");
    // A target conversation that does not parse is refused when the file is read.
    let bad = parse_str(
        "[[schedules]]\nname = \"b\"\ncron = \"* * * * *\"\nprompt = \"p\"\ntarget = \"nowhere\"\n",
        "config/butler.toml",
        &Env::from_pairs(Vec::<(String, String)>::new()),
    );
    assert!(bad.unwrap_err().to_string().contains("schedules"), "names the section");
}

fn entry(name: &str, cron: &str, prompt: &str, owner: Option<&str>) -> ScheduleConfig {
    ScheduleConfig {
        name: name.into(),
        cron: cron.into(),
        tz: "Europe/Berlin".into(),
        prompt: prompt.into(),
        target: "web:briefings".parse().unwrap(),
        owner: owner.map(|o| o.parse().unwrap()),
        mode: ScheduleMode::Heartbeat,
        missed: butler::config::Missed::Skip,
        grace_secs: 120,
    }
}

#[tokio::test]
async fn config_jobs_are_stored_by_name_at_start() {
    let db = SqliteTestDb::new();
    let store = butler::store::connect(&db.url, 2).await.unwrap();
    store.migrate().await.unwrap();
    let access_cfg = AccessConfig { owners: vec!["telegram:42".parse().unwrap()], ..AccessConfig::default() };
    let access = Arc::new(Access::new(&access_cfg, [butler::channel::Identity::new("cli", "local")], "UTC"));
    let first = [
        entry("brief", "0 8 * * 1-5", "Brief me.", None),
        entry("alice-hb", "*/30 * * * *", "News?", Some("cli:local")),
    ];
    Schedules::new(&first, store.clone(), store.clone(), access.clone()).sync_config().await.unwrap();
    let rows = store.schedules_list(&ScheduleFilter::Scope("config".into())).await.unwrap();
    let view: Vec<(&str, &str, ScheduleSource, ScheduleMode, i64)> =
        rows.iter().map(|r| (r.name.as_str(), r.owner.as_str(), r.source, r.mode, r.grace_ms)).collect();
    assert_eq!(
        view,
        [
            ("brief", "telegram:42", ScheduleSource::Config, ScheduleMode::Heartbeat, 120_000),
            ("alice-hb", "cli:local", ScheduleSource::Config, ScheduleMode::Heartbeat, 120_000)
        ],
        "the first owner by default"
    );
    let owner = store.identity_user(&"telegram:42".parse().unwrap()).await.unwrap().expect("the owner's user");
    assert_eq!(rows[0].owner_user.as_deref(), Some(owner.id.as_str()), "the owner's own job (/schedules lists it)");
    let brief = rows[0].clone();

    // A restart with the entry edited (same timing) and the other removed.
    crate::set_next(&*store, brief.id, brief.next_fire_ms.unwrap() - 7 * 86_400_000).await;
    let second = [entry("brief", "0 8 * * 1-5", "Brief me, shortly.", None)];
    Schedules::new(&second, store.clone(), store.clone(), access.clone()).sync_config().await.unwrap();
    let rows = store.schedules_list(&ScheduleFilter::Scope("config".into())).await.unwrap();
    assert_eq!(rows.len(), 1, "a removed entry's job is deleted");
    assert_eq!((rows[0].id, rows[0].prompt.as_str()), (brief.id, "Brief me, shortly."));
    assert_eq!(
        rows[0].next_fire_ms,
        Some(brief.next_fire_ms.unwrap() - 7 * 86_400_000),
        "a pending (missed) time stays"
    );
    // A changed cron takes a new fire time.
    let third = [entry("brief", "0 9 * * 1-5", "Brief me, shortly.", None)];
    Schedules::new(&third, store.clone(), store.clone(), access).sync_config().await.unwrap();
    let row = store.schedules_list(&ScheduleFilter::Id(brief.id)).await.unwrap().pop().unwrap();
    assert!(row.next_fire_ms.unwrap() > butler::store::now_ms(), "the new cron's next time");
    store.close().await;
}
