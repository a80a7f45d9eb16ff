//! A profile that is always known (issue 31 point 5): memories a person pins (`/memory pin ID`,
//! or the archivist's `profile` facts) and their time zone go into the system prompt of each new
//! private session, the same bytes for the whole session; never into a group's, never another
//! person's memory, and within `[memory] profile_max_tokens`.

use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::{eventually, group_message, replies};
use butler::store::MemoryScope;

const PROFILE: &str = "What you always know about this person";
#[tokio::test]
async fn pinned_memories_are_always_in_a_new_private_session_and_stay_byte_stable() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.memory.archivist = false;
    let app = TestApp::start(cfg, Some(dir)).await;
    let store = &app.app.store;
    let name = store.memory_add(&MemoryScope::personal("local"), "Their name is Ada Lovelace", None).await.unwrap();
    let units = store.memory_add(&MemoryScope::personal("local"), "Always answer in metric units", None).await.unwrap();
    let other = store.memory_add(&MemoryScope::personal("bob"), "Bob's secret is 42", None).await.unwrap();

    // (command, the answer starts with)
    let cases = [
        (format!("/memory pin {}", name.id), "📌 Pinned memory"),
        (format!("/memory pin {}", units.id), "📌 Pinned memory"),
        (format!("/memory pin {}", other.id), "There is no memory"),
        ("/memory pin".to_string(), "Use `/memory`"),
    ];
    for (i, (command, want)) in cases.iter().enumerate() {
        app.post("p", "local", command).await;
        let answer = replies(&app, "p", i + 1).await.pop().unwrap();
        assert!(answer.starts_with(want), "{command}: {answer}");
    }
    app.post("p", "local", "/memory").await;
    let listed = replies(&app, "p", 5).await.pop().unwrap();
    assert!(listed.contains(&format!("📌 [memory {}] Their name is Ada Lovelace", name.id)), "{listed}");
    assert!(store.memory_pins("bob").await.unwrap().is_empty(), "nobody pins another person's memory");

    // A new private session carries the profile; two turns send the same bytes.
    app.post("p", "local", "/new").await;
    replies(&app, "p", 6).await;
    for n in [7, 8] {
        app.post("p", "local", "hello there").await;
        replies(&app, "p", n).await;
    }
    let prompts: Vec<String> = llm.requests().iter().map(|r| r.system_text()).collect();
    let [.., first, second] = &prompts[..] else { panic!("two turns") };
    assert_eq!(first, second, "the system prompt is byte-stable within a session");
    let profile = &first[first.find(PROFILE).expect("the profile is in the prompt")..];
    assert!(profile.contains("- Time zone: UTC"), "{profile}");
    assert!(profile.contains(&format!("- [memory {}] Their name is Ada Lovelace", name.id)), "{profile}");
    assert!(profile.contains("Always answer in metric units") && !profile.contains("Bob"), "{profile}");

    // A group conversation never reads it.
    app.emit(group_message("@butler hello group")).await;
    eventually("the group's turn", || async {
        llm.requests().iter().any(|r| r.last_user_text().contains("hello group"))
    })
    .await;
    let group_prompt = llm.requests().into_iter().find(|r| r.last_user_text().contains("hello group")).unwrap();
    assert!(!group_prompt.system_text().contains(PROFILE), "no profile in a group");
    app.stop().await;
}

#[tokio::test]
async fn the_profile_keeps_to_its_budget_and_the_archivist_pins_what_it_proposes() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    cfg.memory.archivist = true;
    cfg.memory.profile_max_tokens = 40;
    let app = TestApp::start(cfg, Some(dir)).await;
    llm.on(
        "Known memories:",
        Reply::text(r#"{"profile": ["Wants to be called Captain"], "add": ["Has a cat named Tom"]}"#),
    );
    app.post("q", "local", "Please call me Captain from now on; my cat Tom says hi").await;
    replies(&app, "q", 1).await;
    eventually("the archivist's pin", || async { !app.app.store.memory_pins("local").await.unwrap().is_empty() }).await;
    let pins = app.app.store.memory_pins("local").await.unwrap();
    assert_eq!(pins.iter().map(|m| m.text.as_str()).collect::<Vec<_>>(), ["Wants to be called Captain"]);
    // More pins than 40 tokens hold: the rest are named as left out.
    for i in 0..5 {
        let m = app
            .app
            .store
            .memory_add(
                &MemoryScope::personal("local"),
                &format!("Standing instruction number {i} is rather long"),
                None,
            )
            .await
            .unwrap();
        app.app.store.memory_pin("local", m.id, true).await.unwrap();
    }
    app.post("q", "local", "/new").await;
    replies(&app, "q", 2).await;
    app.post("q", "local", "who am I?").await;
    replies(&app, "q", 3).await;
    let prompt =
        llm.requests().into_iter().rev().find(|r| r.last_user_text().contains("who am I")).unwrap().system_text();
    let profile = &prompt[prompt.find(PROFILE).expect("a profile")..];
    assert!(profile.contains("Wants to be called Captain"), "{profile}");
    assert!(profile.contains("more pinned memories did not fit"), "{profile}");
    assert!(profile.len() < 40 * 4 + 200, "within the budget: {} chars", profile.len());
    app.stop().await;
}
