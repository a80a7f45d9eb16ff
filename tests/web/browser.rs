//! The web chat page in a real browser: headless Chromium driven over WebDriver (chromedriver +
//! fantoccini) against an in-process Butler and the scripted fake LLM. Covers sending with
//! Enter and watching a reply stream in, clicking a message button (Stop), that model output
//! cannot inject markup or script, what the markdown renderer builds, the "no model
//! configured" banner, token mode (with reload and New chat), and reconnecting after a server
//! restart, filling in what the page missed meanwhile. Submodules: `stop` (a held click on
//! Stop, and Send turning into Stop), `conversations` (the conversation list and `?c=ID`
//! links), `rendering` (tables, code copy buttons, safe links, status words), `details` (an
//! approval request's long detail folded behind "Show all").
//!
//! Each test starts its own chromedriver (in its own process group, killed by a guard even
//! when the test panics) and a Chromium with a fresh profile and no network features.
//! chromium and chromedriver must be installed at /usr/bin; `tests/run` installs them.

mod conversations;
mod details;
mod driver;
mod files;
mod panels;
mod rendering;
mod stop;

use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, Reply};
use driver::*;
use fantoccini::key::Key;
use fantoccini::{Client, Locator};
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enter_sends_and_the_reply_streams_in() {
    let fake = FakeLlm::start().await;
    let final_text = "The quick brown fox jumps over the lazy dog.";
    fake.on(
        "Hello Butler",
        Reply::chunks(["The quick ", "brown fox ", "jumps over ", "the lazy dog."])
            .chunk_delay(Duration::from_millis(700)),
    );
    let (cfg, dir) = config(Some(&fake.openai_url()));
    let app = TestApp::start(cfg, Some(dir)).await;
    let (_driver, page) = open_browser().await;
    load_page(&page, &app).await;

    // Record every text the reply shows, so a draft state between two polls is not missed.
    js(
        &page,
        "window.__seen = [];
         const root = document.getElementById('messages');
         new MutationObserver(() => {
           for (const t of root.querySelectorAll('.msg.assistant .text')) {
             const s = t.textContent;
             if (window.__seen[window.__seen.length - 1] !== s) window.__seen.push(s);
           }
         }).observe(root, { subtree: true, childList: true, characterData: true });
         return true;",
    )
    .await;

    // Shift+Enter is a new line, Enter sends.
    let input = page.find(Locator::Css("textarea#input")).await.expect("textarea#input");
    input.send_keys("Hello Butler").await.expect("type");
    input.send_keys(&format!("{}{}{}", Key::Shift, Key::Enter, Key::Null)).await.expect("Shift+Enter");
    input.send_keys("second line").await.expect("type");
    let typed = js(&page, "return document.getElementById('input').value;").await;
    assert_eq!(typed, "Hello Butler\nsecond line", "Shift+Enter adds a line and does not send");
    input.send_keys(&Key::Enter.to_string()).await.expect("Enter");
    wait_js(
        &page,
        "the user's message",
        "const m = document.querySelector('#messages .msg.user');
         return m && m.dataset.id && m.querySelector('.text').innerText === 'Hello Butler\\nsecond line';",
    )
    .await;
    let partial = wait_js(
        &page,
        "a partial, still streaming reply",
        &format!(
            "const m = document.querySelector('#messages .msg.assistant.streaming');
             const t = m && m.querySelector('.text').textContent;
             return t && t.length < {len} ? t : null;",
            len = final_text.len()
        ),
    )
    .await;
    assert!(final_text.starts_with(partial.as_str().unwrap()), "partial text {partial} is not a prefix");

    let shown = wait_final_reply(&page, "the full reply", &format!("t === {}", json!(final_text))).await;
    assert_eq!(shown, final_text);

    let seen: Vec<String> = serde_json::from_value(js(&page, "return window.__seen;").await).expect("seen texts");
    let drafts: Vec<&String> = seen.iter().filter(|s| !s.is_empty() && s.len() < final_text.len()).collect();
    assert!(!drafts.is_empty(), "no intermediate draft was shown: {seen:?}");
    for d in &drafts {
        assert!(final_text.starts_with(d.as_str()), "draft {d:?} is not a prefix of the reply");
    }

    // One user message (pushed by the server, not shown twice), then one reply, in order; the
    // composer is empty and usable again.
    let state = js(
        &page,
        "return {
           roles: [...document.querySelectorAll('#messages .msg')].map((m) => m.classList.contains('user') ? 'user' : 'assistant'),
           ids: [...document.querySelectorAll('#messages .msg')].map((m) => m.dataset.id),
           input: document.getElementById('input').value,
           disabled: document.getElementById('input').disabled,
         };",
    )
    .await;
    assert_eq!(state["roles"], json!(["user", "assistant"]), "{state}");
    assert_eq!(state["input"], "", "{state}");
    assert_eq!(state["disabled"], false, "{state}");
    let ids: Vec<String> = serde_json::from_value(state["ids"].clone()).unwrap();
    let stored: Vec<String> =
        app.messages(&stored_conversation(&page).await).await.iter().map(|m| m["id"].to_string()).collect();
    assert_eq!(ids, stored, "the page shows exactly the stored messages");

    page.close().await.expect("close the browser");
    app.stop().await;
}

/// The conversation id the page keeps in localStorage.
async fn stored_conversation(page: &Client) -> String {
    let v = js(page, "return localStorage.getItem('butler.conversation');").await;
    v.as_str().expect("a current conversation").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_button_stops_a_streaming_reply() {
    let fake = FakeLlm::start().await;
    let words: Vec<String> = (0..80).map(|i| format!("word{i} ")).collect();
    fake.on("long story", Reply::chunks(words).chunk_delay(Duration::from_millis(400)));
    let (cfg, dir) = config(Some(&fake.openai_url()));
    let app = TestApp::start(cfg, Some(dir)).await;
    let (_driver, page) = open_browser().await;
    load_page(&page, &app).await;

    send_message(&page, "Tell me a long story").await;
    wait_js(
        &page,
        "the Stop button on the streaming reply",
        "const b = document.querySelector('#messages .msg.assistant .buttons button');
         return b && !b.disabled && b.textContent === 'Stop' && b.classList.contains('btn-danger');",
    )
    .await;
    let stop = page.find(Locator::Css("#messages .msg.assistant .buttons button")).await.expect("the Stop button");
    // A person's press, not WebDriver's instant click, which a busy machine can lose while the
    // draft changes under it (see browser/stop.rs).
    held_click(&page, &stop, Duration::from_millis(150)).await;

    let text = wait_final_reply(&page, "the stopped reply", "t.trim().endsWith('Stopped.')").await;
    assert!(text.starts_with("word0"), "the partial text stays: {text:?}");
    assert!(!text.contains("word79"), "the reply was stopped before its end: {text:?}");
    let buttons = js(&page, "return document.querySelectorAll('#messages .buttons button').length;").await;
    assert_eq!(buttons, json!(0));

    let stored = app.messages(&stored_conversation(&page).await).await;
    let reply = stored.iter().rfind(|m| m["role"] == "assistant").expect("a stored reply");
    assert!(reply["text"].as_str().unwrap().ends_with("⏹ Stopped."), "{reply}");

    page.close().await.expect("close the browser");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_output_cannot_inject_markup_or_script() {
    let fake = FakeLlm::start().await;
    let reply = "Careful: <img src=x onerror=\"window.__pwned=1\"> and <script>window.__pwned=2</script>\n\n\
                 Try [click](javascript:window.__pwned=3), or **bold**, or this [link](https://example.com).";
    fake.on("inject", Reply::chunks([reply]));
    let (cfg, dir) = config(Some(&fake.openai_url()));
    let app = TestApp::start(cfg, Some(dir)).await;
    let (_driver, page) = open_browser().await;
    load_page(&page, &app).await;

    let typed = "inject <b>this</b> <img src=y onerror=\"window.__pwned=4\">";
    send_message(&page, typed).await;
    wait_final_reply(&page, "the reply", "t.includes('link')").await;
    // Give any (wrongly) created element a moment to load and fire its handlers.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let r = js(
        &page,
        "const root = document.getElementById('messages');
         const reply = [...root.querySelectorAll('.msg.assistant')].pop();
         const links = [...root.querySelectorAll('a')];
         return {
           pwned: typeof window.__pwned,
           imgs: root.querySelectorAll('img').length,
           scripts: root.querySelectorAll('script').length,
           handlers: root.querySelectorAll('[onerror], [onclick], [onload]').length,
           jsLinks: links.filter((a) => /^\\s*javascript:/i.test(a.getAttribute('href') || '')).length,
           clickIsLink: links.some((a) => a.textContent.includes('click')),
           links: links.map((a) => ({ text: a.textContent, href: a.getAttribute('href'), rel: a.rel, target: a.target })),
           strong: [...reply.querySelectorAll('strong')].map((s) => s.textContent),
           reply: reply.querySelector('.text').textContent,
           user: root.querySelector('.msg.user .text').textContent,
         };",
    )
    .await;
    assert_eq!(r["pwned"], "undefined", "{r:#}");
    assert_eq!(r["imgs"], 0, "{r:#}");
    assert_eq!(r["scripts"], 0, "{r:#}");
    assert_eq!(r["handlers"], 0, "{r:#}");
    assert_eq!(r["jsLinks"], 0, "{r:#}");
    assert_eq!(r["clickIsLink"], false, "{r:#}");
    let text = r["reply"].as_str().unwrap();
    for shown in [
        "<img src=x onerror=\"window.__pwned=1\">",
        "<script>window.__pwned=2</script>",
        "[click](javascript:window.__pwned=3)",
    ] {
        assert!(text.contains(shown), "{shown:?} is shown as text: {r:#}");
    }
    assert_eq!(r["user"], typed, "the user's own text is shown as typed: {r:#}");
    assert_eq!(r["strong"], json!(["bold"]), "{r:#}");
    let links = r["links"].as_array().unwrap();
    assert_eq!(links.len(), 1, "{r:#}");
    assert_eq!(links[0]["text"], "link");
    assert_eq!(links[0]["href"], "https://example.com/");
    assert_eq!(links[0]["target"], "_blank");
    let rel = links[0]["rel"].as_str().unwrap();
    assert!(rel.contains("noopener") && rel.contains("noreferrer"), "{r:#}");

    page.close().await.expect("close the browser");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_model_the_page_says_what_to_set() {
    let (cfg, dir) = config(None);
    let app = TestApp::start(cfg, Some(dir)).await;
    let (_driver, page) = open_browser().await;
    load_page(&page, &app).await;

    let banner = page.find(Locator::Css("#llm-banner")).await.expect("#llm-banner");
    assert!(banner.is_displayed().await.unwrap(), "the banner is visible:\n{}", describe(&page).await);
    let text = banner.text().await.unwrap();
    assert!(text.contains("OPENAI_API_KEY"), "the banner names what to set: {text:?}");

    // Messages still work: the server answers with the same explanation, the banner stays.
    send_message(&page, "hello?").await;
    wait_final_reply(&page, "the explanation as a reply", "t.includes('OPENAI_API_KEY')").await;
    assert!(banner.is_displayed().await.unwrap(), "the banner stays");

    page.close().await.expect("close the browser");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_mode_asks_for_the_token_then_chats() {
    const TOKEN: &str = "browser-test-token-7f3a";
    let fake = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&fake.openai_url()));
    cfg.channels.web.token = Some(butler::config::Secret::new(TOKEN));
    let app = TestApp::start(cfg, Some(dir)).await;
    let (_driver, page) = open_browser().await;
    load_page(&page, &app).await;

    wait_js(&page, "the token form", "return !document.getElementById('token-gate').hidden;").await;
    let field = page.find(Locator::Css("#token")).await.expect("#token");
    field.send_keys(&format!("wrong-token{}", Key::Enter)).await.expect("type a wrong token");
    wait_js(
        &page,
        "the wrong token to be refused",
        "const e = document.getElementById('token-error'); return !e.hidden && e.textContent.includes('not valid');",
    )
    .await;
    field.clear().await.expect("clear the token field");
    field.send_keys(&format!("{TOKEN}{}", Key::Enter)).await.expect("type the token");
    wait_js(&page, "the token form to close", "return document.getElementById('token-gate').hidden;").await;
    let kept = js(&page, "return localStorage.getItem('butler.token');").await;
    assert_eq!(kept, TOKEN, "the token is kept in localStorage");

    send_message(&page, "hello with a token").await;
    wait_final_reply(&page, "the echoed reply", "t === 'echo: hello with a token'").await;

    // A reload keeps the token and the conversation: no form, the history comes back.
    page.refresh().await.expect("reload");
    wait_js(
        &page,
        "the conversation after a reload",
        "return document.querySelectorAll('#messages .msg').length === 2
           && document.getElementById('token-gate').hidden
           && document.querySelector('#messages .msg.user .text').textContent === 'hello with a token';",
    )
    .await;

    // New chat: an empty page and a fresh conversation id.
    let before = stored_conversation(&page).await;
    page.find(Locator::Css("#new-chat")).await.expect("#new-chat").click().await.expect("click New chat");
    wait_js(&page, "an empty conversation", "return document.querySelectorAll('#messages .msg').length === 0;").await;
    let after = stored_conversation(&page).await;
    assert_ne!(before, after);
    assert!(
        after.len() == 10 && after.starts_with("c-") && after[2..].chars().all(|c| c.is_ascii_hexdigit()),
        "a new id like c-<8 hex>: {after}"
    );
    send_message(&page, "second chat").await;
    wait_final_reply(&page, "the reply in the new chat", "t === 'echo: second chat'").await;
    assert_eq!(js(&page, "return document.querySelectorAll('#messages .msg').length;").await, json!(2));

    page.close().await.expect("close the browser");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn markdown_becomes_elements() {
    let fake = FakeLlm::start().await;
    let md = "# Title\n### Small\nSome *em*, _em too_, `a<b>`, snake_case_name and https://example.com/a_(b).\nNext line.\n\n\
              - one\n- two **strong**\n  - nested\n\n3. three\n4. four\n\n\
              ```rust\nlet s = \"<b>hi</b>\";\n```\n\n[mail](mailto:me@example.com) [rel](/x)";
    fake.on("markdown", Reply::chunks([md]));
    let (cfg, dir) = config(Some(&fake.openai_url()));
    let app = TestApp::start(cfg, Some(dir)).await;
    let (_driver, page) = open_browser().await;
    load_page(&page, &app).await;

    send_message(&page, "markdown please").await;
    wait_final_reply(&page, "the reply", "t.includes('mail')").await;
    let r = js(
        &page,
        "const t = [...document.querySelectorAll('#messages .msg.assistant .text')].pop();
         const all = (s) => [...t.querySelectorAll(s)].map((e) => e.textContent);
         return {
           h1: all('h1'), h3: all('h3'), em: all('em'), code: all(':not(pre) > code'),
           p: [...t.querySelectorAll('p')].map((p) => p.innerText),
           ul: all(':scope > ul > li'), nested: all('ul ul > li'),
           ol: all('ol > li'), start: t.querySelector('ol').getAttribute('start'),
           pre: all('pre > code.language-rust'),
           links: [...t.querySelectorAll('a')].map((a) => [a.textContent, a.getAttribute('href')]),
           strong: all('li strong'),
         };",
    )
    .await;
    assert_eq!(r["h1"], json!(["Title"]), "{r:#}");
    assert_eq!(r["h3"], json!(["Small"]), "{r:#}");
    assert_eq!(r["em"], json!(["em", "em too"]), "{r:#}");
    assert_eq!(r["code"], json!(["a<b>"]), "{r:#}");
    assert!(
        r["p"][0].as_str().unwrap().contains("snake_case_name and https://example.com/a_(b).\nNext line."),
        "{r:#}"
    );
    assert_eq!(r["ul"].as_array().unwrap().len(), 2, "{r:#}");
    assert_eq!(r["nested"], json!(["nested"]), "{r:#}");
    assert_eq!(r["strong"], json!(["strong"]), "{r:#}");
    assert_eq!(r["ol"], json!(["three", "four"]), "{r:#}");
    assert_eq!(r["start"], "3", "{r:#}");
    assert_eq!(r["pre"], json!(["let s = \"<b>hi</b>\";"]), "{r:#}");
    assert_eq!(
        r["links"],
        json!([["https://example.com/a_(b)", "https://example.com/a_(b)"], ["mail", "mailto:me@example.com"]]),
        "a bare URL without its trailing dot, mailto, and no relative link: {r:#}"
    );

    page.close().await.expect("close the browser");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_reconnects_after_a_restart_and_fills_the_gap() {
    let fake = FakeLlm::start().await;
    // One database and one address for both runs of the server.
    let (mut cfg, dir) = config(Some(&fake.openai_url()));
    cfg.server.listen = format!("127.0.0.1:{}", free_port());
    let app = TestApp::start(cfg.clone(), None).await;
    let (_driver, page) = open_browser().await;
    load_page(&page, &app).await;

    send_message(&page, "before the restart").await;
    wait_final_reply(&page, "the first reply", "t === 'echo: before the restart'").await;
    let conversation = stored_conversation(&page).await;

    app.stop().await;
    wait_js(
        &page,
        "the page to notice the lost connection",
        "const s = document.getElementById('status'); return !s.hidden && s.textContent.includes('reconnecting');",
    )
    .await;

    // While the page is away, a message arrives in its conversation (e.g. from another tab).
    let app = TestApp::start(cfg, None).await;
    let (status, body) = app.post(&conversation, "local", "while you were away").await;
    assert_eq!(status, 202, "{body}");
    app.wait_replies(&conversation, 2, 30).await;

    let shown = wait_js(
        &page,
        "the page to reconnect and show what it missed",
        "const texts = [...document.querySelectorAll('#messages .msg .text')].map((t) => t.textContent);
         const done = texts.length === 4 && texts[3] === 'echo: while you were away'
           && document.getElementById('status').hidden;
         return done ? texts : null;",
    )
    .await;
    assert_eq!(
        shown,
        json!(["before the restart", "echo: before the restart", "while you were away", "echo: while you were away"]),
        "each message once, in order"
    );

    // And the reconnected stream carries new replies live.
    send_message(&page, "after the restart").await;
    wait_final_reply(&page, "a reply over the new stream", "t === 'echo: after the restart'").await;

    page.close().await.expect("close the browser");
    app.stop().await;
    drop(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_is_buttons_and_approve_runs_the_shell_command() {
    let fake = FakeLlm::start().await;
    fake.on("run the check", Reply::tool_call("shell", json!({"command": "echo hello-from-shell"})));
    fake.on(
        "run the check",
        Reply::chunks(["The command ", "printed ", "hello-from-shell ", "as expected."])
            .chunk_delay(Duration::from_millis(300)),
    );
    let (mut cfg, dir) = config(Some(&fake.openai_url()));
    cfg.tools.shell.enabled = true;
    cfg.tools.workspace_dir = dir.path().join("workspaces").display().to_string();
    let app = TestApp::start(cfg, Some(dir)).await;
    let (_driver, page) = open_browser().await;
    load_page(&page, &app).await;

    send_message(&page, "please run the check").await;
    wait_js(
        &page,
        "the approval buttons",
        "const labels = [...document.querySelectorAll('#messages .msg.assistant .buttons button')].map(b => b.textContent);
         return labels.join('|') === 'Approve once|Always for this session|Deny';",
    )
    .await;
    let request =
        js(&page, "const m = [...document.querySelectorAll('#messages .msg.assistant')].find(m => m.querySelector('.buttons button')); return m.querySelector('.text').textContent;").await;
    assert!(request.as_str().unwrap().contains("echo hello-from-shell"), "{request}");
    let mut approve = None;
    for button in page.find_all(Locator::Css("#messages .buttons button")).await.expect("the buttons") {
        if button.text().await.expect("button text") == "Approve once" {
            approve = Some(button);
        }
    }
    approve.expect("the Approve button").click().await.expect("click Approve");

    // The answer streams in after the command ran; the request shows who approved it.
    wait_js(
        &page,
        "a streaming part of the answer",
        "return [...document.querySelectorAll('#messages .msg.assistant .text')].some(t => t.textContent.startsWith('The command') && !t.textContent.endsWith('as expected.'));",
    )
    .await;
    let text = wait_final_reply(&page, "the final answer", "t.endsWith('as expected.')").await;
    assert_eq!(text, "The command printed hello-from-shell as expected.");
    wait_js(
        &page,
        "the request edited in place",
        "return [...document.querySelectorAll('#messages .msg.assistant .text')].some(t => t.textContent.startsWith('✅ Approved by local'));",
    )
    .await;
    let result = fake.requests()[1].last_tool_result().unwrap();
    assert!(result.contains("hello-from-shell"), "the command ran: {result}");
    page.close().await.expect("close the browser");
    app.stop().await;
}
