//! Commands are the same on every channel and answered in triage without the model; `/cmd@bot`
//! works; unknown slash words go to the agent; every non-routine decision is recorded and shown
//! to the owner by /status.

use crate::{decisions, start};
use butler::channel::ConversationKind::Group;

#[tokio::test]
async fn commands_are_answered_without_the_model() {
    let (app, chat, llm) = start(|_| {}).await;
    let cases: &[(&str, &str)] = &[
        ("/help", "/link - link another chat account"),
        ("/whoami@butler_bot", "You are `chat:owner`"),
        ("/status", "Model: fake-model"),
        ("/stop", "Nothing is running."),
        ("/approve a1b2c3", "That approval request does not exist."),
        ("/deny a1b2c3", "That approval request does not exist."),
        ("/approve", "Say which approval"),
        ("/pair", "No pairing requests are waiting."),
        ("/pair dance", "Use `/pair`"),
        ("/link", "send `/link "),
        ("/new", "Started a new conversation"),
    ];
    for (i, (command, want)) in cases.iter().enumerate() {
        app.emit(chat.dm("owner", command)).await;
        let texts = chat.wait_texts("owner", i + 1).await;
        assert!(texts[i].contains(want), "{command}: {}", texts[i]);
    }
    assert_eq!(llm.request_count(), 0, "no command called the model");
    // Unknown slash words are for the agent.
    app.emit(chat.dm("owner", "/weather Paris")).await;
    let texts = chat.wait_texts("owner", cases.len() + 1).await;
    assert_eq!(texts.last().unwrap(), "echo: /weather Paris");
    app.stop().await;
}

#[tokio::test]
async fn decisions_are_recorded_and_shown_to_the_owner() {
    let (app, chat, _llm) = start(|c| c.access.allow = vec!["chat:member".parse().unwrap()]).await;
    app.emit(chat.message("member", "M", "g", Group, false, "chatter")).await;
    app.emit(chat.dm("stranger", "let me in")).await;
    chat.wait_texts("stranger", 1).await;
    let mut bot = chat.dm("somebot", "beep");
    bot.actor.is_bot = true;
    app.emit(bot).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let recorded = decisions(&app).await;
    let want: Vec<(String, String)> = [("drop", "chat:member"), ("pairing", "chat:stranger"), ("drop", "chat:somebot")]
        .iter()
        .map(|(k, a)| (k.to_string(), a.to_string()))
        .collect();
    assert_eq!(recorded, want);

    app.emit(chat.dm("owner", "/status")).await;
    let status = chat.wait_texts("owner", 1).await.remove(0);
    assert!(status.contains("Triage today: drop 2, pairing 1"), "{status}");
    assert!(status.contains("Pairing requests waiting: 1"), "{status}");
    assert!(status.contains("pairing `chat:stranger`"), "{status}");
    // A member's /status does not show the triage record.
    app.emit(chat.dm("member", "/status")).await;
    let member = chat.wait_texts("member", 1).await.remove(0);
    assert!(!member.contains("Triage today"), "{member}");
    app.stop().await;
}

/// `/status` with no model says so instead of estimating a context nobody sent or counting
/// "1 turns"; with a model, one turn is "1 turn".
#[tokio::test]
async fn status_reads_right_without_a_model() {
    let (app, chat, llm) = start(|c| c.llm.model = String::new()).await;
    app.emit(chat.dm("owner", "hello")).await;
    let texts = chat.wait_texts("owner", 1).await;
    assert!(texts[0].contains("model"), "the reply says what is missing: {}", texts[0]);
    app.emit(chat.dm("owner", "/status")).await;
    let status = chat.wait_texts("owner", 2).await.remove(1);
    let want = ["Model: not configured", "Context: nothing sent (no model is configured)", "Today: no model calls"];
    for line in want {
        assert!(status.contains(line), "`{line}` missing from:\n{status}");
    }
    assert!(!status.contains("turns") && !status.contains("about"), "{status}");
    assert_eq!(llm.request_count(), 0);
    app.stop().await;
}
