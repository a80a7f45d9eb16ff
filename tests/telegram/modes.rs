//! Point 1 (and 7): long polling by default (getMe, deleteWebhook, setMyCommands, then
//! getUpdates); webhook mode with the route in Butler's one server, the secret header checked
//! (401 and nothing stored when wrong or missing), setWebhook called with the secret on start,
//! and a redelivered update answered once.

use crate::support::fake_telegram::updates::dm;
use crate::{settle, Tg, OWNER};
use serde_json::Value;

#[tokio::test]
async fn polling_is_the_default_and_registers_the_command_menu() {
    let tg = Tg::start().await;
    tg.polling().await;
    let order: Vec<String> = tg.fake.all_calls().into_iter().map(|c| c.method).collect();
    let pos = |m: &str| order.iter().position(|x| x == m).unwrap_or_else(|| panic!("no {m} in {order:?}"));
    assert!(pos("getMe") < pos("deleteWebhook"), "{order:?}");
    assert!(pos("deleteWebhook") < pos("getUpdates"), "{order:?}");
    assert!(pos("setMyCommands") < pos("getUpdates"), "{order:?}");
    // deleteWebhook keeps the pending updates.
    assert_ne!(tg.fake.calls("deleteWebhook")[0].body["drop_pending_updates"], Value::Bool(true));
    let commands = &tg.fake.calls("setMyCommands")[0].body["commands"];
    let names: Vec<&str> = commands.as_array().unwrap().iter().map(|c| c["command"].as_str().unwrap()).collect();
    for want in ["help", "new", "stop", "status", "whoami", "approve", "deny", "tasks", "cancel"] {
        assert!(names.contains(&want), "{want} not in the menu {names:?}");
    }

    tg.fake.push(dm(OWNER, 1, "hello there"));
    assert_eq!(tg.texts(OWNER, 1).await, vec!["echo: hello there"]);
    assert_eq!(tg.fake.calls("sendMessage")[0].body["parse_mode"], "HTML");
    tg.stop().await;
}

pub(crate) const SECRET: &str = "s3cret-Token_42";

pub(crate) async fn webhook_app() -> Tg {
    Tg::start_with(
        |cfg| {
            let t = cfg.channels.platforms.get_mut("telegram").unwrap();
            t.insert("mode".into(), "webhook".into());
            t.insert("webhook_secret".into(), SECRET.into());
            t.insert("webhook_url".into(), "https://butler.example.com/channels/telegram/webhook".into());
        },
        vec![],
    )
    .await
}

pub(crate) async fn post(tg: &Tg, secret: Option<&str>, body: &Value) -> (u16, Value) {
    let mut req = tg.app.http.post(tg.app.url("/channels/telegram/webhook")).json(body);
    if let Some(s) = secret {
        req = req.header("X-Telegram-Bot-Api-Secret-Token", s);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn webhook_mode_checks_the_secret_and_answers_redeliveries_once() {
    let tg = webhook_app().await;
    tg.fake.wait_calls("setWebhook", 1, 10).await;
    let (url, secret) = tg.fake.webhook().expect("a webhook was set");
    assert_eq!(url, "https://butler.example.com/channels/telegram/webhook");
    assert_eq!(secret.as_deref(), Some(SECRET));
    tg.fake.wait_calls("setMyCommands", 1, 10).await;

    let mut update = dm(OWNER, 5, "via webhook");
    update["update_id"] = 900_001.into();
    for bad in [None, Some("wrong"), Some(""), Some("s3cret-Token_4"), Some("s3cret-Token_42x")] {
        let (status, body) = post(&tg, bad, &update).await;
        assert_eq!(status, 401, "{bad:?}");
        assert_eq!(body["error"]["code"], "invalid_secret", "{body}");
        assert!(body["error"]["message"].as_str().unwrap().contains("Secret-Token"), "{body}");
    }
    assert_eq!(tg.app.inbox_count().await, 0, "nothing stored for a bad secret");
    let (status, _) = post(&tg, Some(SECRET), &serde_json::json!({"not": "an update"})).await;
    assert_eq!(status, 400);

    // Telegram redelivers when it did not see the 200 in time: the same update_id twice.
    assert_eq!(post(&tg, Some(SECRET), &update).await.0, 200);
    assert_eq!(post(&tg, Some(SECRET), &update).await.0, 200);
    assert_eq!(tg.texts(OWNER, 1).await, vec!["echo: via webhook"]);
    settle().await;
    assert_eq!(tg.fake.chat(OWNER).len(), 1, "one reply for a redelivered update");
    assert_eq!(tg.llm.request_count(), 1);
    assert!(tg.fake.calls("getUpdates").is_empty(), "no polling in webhook mode");
    assert_eq!(tg.app.inbox_count().await, 1);
    tg.stop().await;
}
