//! What one event produced (`event_outcome`) and the store's announcements of settled events
//! (`settled`): the status, the reply and whether it was delivered, a failure notice, the
//! approvals waiting in the event's session (not another session's); an announcement when the
//! event reaches its final status and when its reply is delivered, none for a retry.

use crate::fixtures::{approval, event, reply, session, strings};
use butler::store::{failed_key, now_ms, reply_key, InboxStatus, NewMessage, OutboxMark, Settled, Store, TurnCommit};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::TryRecvError;
use tokio::sync::broadcast::Receiver;

async fn heard(news: &mut Receiver<Settled>) -> Settled {
    tokio::time::timeout(Duration::from_secs(5), news.recv()).await.expect("announced in time").expect("open")
}

pub async fn follows_an_event_to_its_end(store: Arc<dyn Store>) {
    let mut news = store.settled();
    assert!(store.event_outcome("nope").await.unwrap().is_none(), "an unknown event has no outcome");

    // e1 from u1 in web:c1: its session is `dm:web:c1:u1`.
    store.inbox_insert(&event("e1", "web", "c1")).await.unwrap();
    let o = store.event_outcome("e1").await.unwrap().expect("stored");
    assert_eq!((o.status, o.finished(), o.reply.is_none(), o.waiting.len()), (InboxStatus::Pending, false, true, 0));
    store.inbox_claim(&strings(&["web"]), "w", 10).await.unwrap();
    store.inbox_retry("e1", 0, Some("try again")).await.unwrap();
    assert_eq!(news.try_recv().unwrap_err(), TryRecvError::Empty, "a retry settles nothing");
    store.inbox_claim(&strings(&["web"]), "w", 10).await.unwrap();

    let s1 = store.session_open(&session("s1", "dm:web:c1:u1")).await.unwrap();
    let other = store.session_open(&session("s2", "dm:web:c9:u1")).await.unwrap();
    let (now, later) = (now_ms(), now_ms() + 600_000);
    let commit = TurnCommit {
        inbox_id: "e1".into(),
        inbox_status: InboxStatus::Done,
        session_id: Some(s1.id.clone()),
        messages: vec![NewMessage::user("hi", None, Some("e1".into())), NewMessage::assistant("the answer", vec![])],
        reply: Some(reply(&reply_key("e1"), "web:c1", "the answer")),
        usage: None,
        approvals: vec![approval("a2", &s1.id, "shell", now + 1, later), approval("a1", &s1.id, "shell", now, later)],
        notices: vec![],
        fence: None,
    };
    let row = store.finish_event(&commit).await.unwrap().expect("a reply row");
    // Another session's pending approval is not this event's business.
    let elsewhere = TurnCommit {
        inbox_id: "not-stored".into(),
        session_id: Some(other.id.clone()),
        messages: vec![],
        reply: None,
        approvals: vec![approval("b1", &other.id, "shell", now, later)],
        ..commit.clone()
    };
    store.finish_event(&elsewhere).await.unwrap();
    assert_eq!(heard(&mut news).await, Settled { event_id: "e1".into(), conversation: "web:c1".into() });

    let o = store.event_outcome("e1").await.unwrap().unwrap();
    assert!(o.finished() && !o.delivered(), "committed, not yet delivered");
    assert_eq!(o.reply.as_ref().map(|r| r.text.as_str()), Some("the answer"));
    assert!(o.failure.is_none());
    let waiting: Vec<&str> = o.waiting.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(waiting, ["a1", "a2"], "this session's pending approvals, oldest first");

    store
        .outbox_mark(row.id, &OutboxMark::Sent { platform_ids: strings(&["m1"]), text: "the answer".into() })
        .await
        .unwrap();
    assert_eq!(heard(&mut news).await.event_id, "e1", "the delivery is announced too");
    assert!(store.event_outcome("e1").await.unwrap().unwrap().delivered());

    // A failed event: its notice is the failure; a dropped one ends without anything.
    for (id, status) in [("e2", InboxStatus::Failed), ("e3", InboxStatus::Dropped)] {
        store.inbox_insert(&event(id, "web", "c2")).await.unwrap();
        if status == InboxStatus::Failed {
            store.outbox_enqueue(&reply(&failed_key(id), "web:c2", "could not answer")).await.unwrap();
        }
        store.inbox_finish(id, status, Some("boom")).await.unwrap();
        assert_eq!(heard(&mut news).await, Settled { event_id: id.into(), conversation: "web:c2".into() });
        let o = store.event_outcome(id).await.unwrap().unwrap();
        assert_eq!(o.status, status);
        assert!(o.finished() && o.delivered() && o.reply.is_none() && o.waiting.is_empty(), "{id}");
        let failure = o.failure.map(|f| f.text);
        assert_eq!(failure.as_deref(), (status == InboxStatus::Failed).then_some("could not answer"), "{id}");
    }
}
