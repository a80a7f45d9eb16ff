//! Issue 16, point 9: an update teloxide cannot read is never dropped silently. The common case
//! (a `from` without `is_bot`, as in Telegram's own documentation examples) is repaired and
//! answered, by polling and by webhook; one that still cannot be read is acknowledged (so it
//! does not block the updates behind it), logged at warn and counted in /metrics.

use crate::modes::{post, webhook_app, SECRET};
use crate::support::fake_telegram::updates::dm;
use crate::{Tg, OWNER};
use serde_json::{json, Value};

/// `dm` with the sender's `is_bot` taken out.
fn without_is_bot(mut update: Value) -> Value {
    update["message"]["from"].as_object_mut().unwrap().remove("is_bot");
    update
}

/// An update whose message teloxide cannot read (no `chat`, no `date`).
fn unreadable() -> Value {
    json!({"message": {"message_id": 77, "text": "half a message"}})
}

async fn unreadable_count(tg: &Tg) -> u64 {
    let text = tg.app.http.get(tg.app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("butler_channel_unreadable_updates_total{channel=\"telegram\"} "))
        .map_or(0, |n| n.parse().unwrap())
}

#[tokio::test]
async fn polling_repairs_the_common_case_and_counts_the_rest() {
    let tg = Tg::start().await;
    let before = unreadable_count(&tg).await;
    tg.fake.push(without_is_bot(dm(OWNER, 1, "no is_bot here")));
    tg.fake.push(unreadable());
    tg.fake.push(dm(OWNER, 3, "after the broken one"));
    assert_eq!(tg.texts(OWNER, 2).await, ["echo: no is_bot here", "echo: after the broken one"]);
    // The count is per process and the other test here adds to it too: at least this one.
    assert!(unreadable_count(&tg).await > before, "the unreadable update is counted");
    assert_eq!(tg.fake.pending(), 0, "and acknowledged: the offset moved past it");
    tg.stop().await;
}

#[tokio::test]
async fn webhook_repairs_the_common_case_and_counts_the_rest() {
    let tg = webhook_app().await;
    tg.fake.wait_calls("setWebhook", 1, 10).await;
    let before = unreadable_count(&tg).await;
    let mut repaired = without_is_bot(dm(OWNER, 5, "webhook without is_bot"));
    repaired["update_id"] = 910_001.into();
    let mut broken = unreadable();
    broken["update_id"] = 910_002.into();
    for update in [repaired, broken] {
        assert_eq!(post(&tg, Some(SECRET), &update).await.0, 200, "acknowledged: {update}");
    }
    assert_eq!(tg.texts(OWNER, 1).await, ["echo: webhook without is_bot"]);
    assert!(unreadable_count(&tg).await > before, "the unreadable update is counted");
    tg.stop().await;
}
