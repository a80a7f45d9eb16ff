//! `butler inbox list [--failed]` and `butler inbox retry ID` through the real binary, and the
//! failed-events line of `butler doctor`.

use super::llm_section;
use crate::support::fake_llm::FakeLlm;
use crate::support::proc::Deployment;
use butler::store::InboxStatus;
use std::process::Output;

fn run(dep: &Deployment, args: &[&str]) -> Output {
    dep.command(args).output().expect("run butler")
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// Runs the binary off the async runtime.
async fn butler(dep: &std::sync::Arc<Deployment>, args: &[&'static str]) -> (Option<i32>, String, String) {
    let (dep, args) = (dep.clone(), args.to_vec());
    let out = tokio::task::spawn_blocking(move || run(&dep, &args)).await.unwrap();
    let (stdout, stderr) = text(&out);
    (out.status.code(), stdout, stderr)
}

fn event(id: &str) -> butler::channel::InboundEvent {
    use butler::channel::*;
    InboundEvent {
        id: EventId(id.into()),
        actor: Actor::new(Identity::new("telegram", "42")),
        conversation: ConversationRef::new("telegram", "42"),
        kind: ConversationKind::Direct,
        addressed: true,
        reply_to: None,
        message_id: None,
        body: EventBody::Message { text: "private words".into() },
        at_ms: 1,
        attachments: Vec::new(),
    }
}

/// (args, exit code, lines stdout must hold, lines it must not)
type Step = (&'static [&'static str], i32, &'static [&'static str], &'static [&'static str]);

#[tokio::test]
async fn inbox_list_failed_and_retry_and_doctor_warn() {
    let llm = FakeLlm::start().await;
    let dep = std::sync::Arc::new(Deployment::new(&llm_section(&llm.openai_url())));
    let store = butler::store::connect(&dep.db_url(), 2).await.unwrap();
    store.migrate().await.unwrap();
    for id in ["tg:poison", "tg:fine"] {
        store.inbox_insert(&event(id)).await.unwrap();
    }
    store.inbox_claim(&["telegram".to_string()], "w", 10).await.unwrap();
    store.inbox_finish("tg:poison", InboxStatus::Failed, Some("gave up after 5 tries: boom")).await.unwrap();
    store.inbox_finish("tg:fine", InboxStatus::Done, None).await.unwrap();

    // (args, exit code, lines stdout must hold, lines it must not)
    let steps: &[Step] = &[
        (&["inbox", "list", "--failed"], 0, &["tg:poison  telegram:42  failed  tries 1", "boom"], &["tg:fine"]),
        (&["inbox", "list"], 0, &["tg:poison", "tg:fine  telegram:42  done"], &["private words"]),
        (&["doctor"], 0, &["[warn] failed events: 1", "butler inbox list --failed"], &[]),
        (&["inbox", "retry", "tg:poison"], 0, &["tg:poison will be tried again"], &[]),
        (&["inbox", "list", "--failed"], 0, &["no failed events"], &["tg:poison"]),
        (&["doctor"], 0, &["[ ok ] failed events: none"], &["[warn] failed events"]),
    ];
    for (args, code, has, lacks) in steps {
        let (got, stdout, stderr) = butler(&dep, args).await;
        assert_eq!(got, Some(*code), "{args:?}: {stdout}\n{stderr}");
        for line in *has {
            assert!(stdout.contains(line), "{args:?}: missing `{line}`:\n{stdout}");
        }
        for line in *lacks {
            assert!(!stdout.contains(line), "{args:?}: unexpected `{line}`:\n{stdout}");
        }
    }
    let row = store.inbox_get("tg:poison").await.unwrap().unwrap();
    assert_eq!((row.status, row.attempts), (InboxStatus::Pending, 0), "re-queued with fresh tries");

    // Retrying what is not failed is an error that says where to look.
    let (got, _, stderr) = butler(&dep, &["inbox", "retry", "tg:fine"]).await;
    assert_eq!(got, Some(1));
    assert!(stderr.contains("no failed event `tg:fine`") && stderr.contains("inbox list --failed"), "{stderr}");
    store.close().await;
}
