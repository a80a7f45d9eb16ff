//! The web chat page in a real browser: headless Chromium driven over WebDriver (chromedriver +
//! fantoccini) against an in-process Butler and the scripted fake LLM. Covers sending with
//! Enter and watching a reply stream in, clicking a message button (Stop), that model output
//! cannot inject markup or script, what the markdown renderer builds, the "no model
//! configured" banner, token mode (with reload and New chat), and reconnecting after a server
//! restart, filling in what the page missed meanwhile.
//!
//! Each test starts its own chromedriver (in its own process group, killed by a guard even
//! when the test panics) and a Chromium with a fresh profile and no network features.
//! chromium and chromedriver must be installed at /usr/bin; `tests/run` installs them.

use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, Reply};
use fantoccini::elements::Element;
use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio::sync::{Semaphore, SemaphorePermit};

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";
/// How long any one expected page state may take to appear (generous: 2 shared cores).
const TIMEOUT: Duration = Duration::from_secs(45);

/// At most two browsers at once: the machine is small and the other tests run alongside.
static BROWSERS: Semaphore = Semaphore::const_new(2);

/// A running chromedriver. Dropping it kills its whole process group (the driver and the
/// Chromium it started), also when a test panics.
struct Driver {
    child: Child,
    url: String,
    /// Chromium's profile and the driver's log.
    dir: tempfile::TempDir,
    _permit: SemaphorePermit<'static>,
}

impl Drop for Driver {
    fn drop(&mut self) {
        // The driver leads its own process group (see `start_driver`): end the group by its id.
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).stderr(Stdio::null()).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn driver_log(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("chromedriver.log")).unwrap_or_default()
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local address").port()
}

/// Starts chromedriver on a free port and waits until it reports ready.
async fn start_driver() -> Driver {
    for path in [CHROMEDRIVER, CHROMIUM] {
        assert!(
            Path::new(path).exists(),
            "{path} is missing: the browser tests need chromium and chromedriver; run tests/run, which installs them"
        );
    }
    let permit = BROWSERS.acquire().await.expect("browser semaphore");
    let dir = tempfile::tempdir().expect("temp dir");
    let port = free_port();
    let log = std::fs::File::create(dir.path().join("chromedriver.log")).expect("driver log");
    let child = {
        use std::os::unix::process::CommandExt;
        Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log handle"))
            .stderr(log)
            .process_group(0)
            .spawn()
            .expect("spawn chromedriver")
    };
    let mut driver = Driver { child, url: format!("http://127.0.0.1:{port}"), dir, _permit: permit };
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(Some(status)) = driver.child.try_wait() {
            panic!("chromedriver exited ({status}) before answering:\n{}", driver_log(driver.dir.path()));
        }
        let ready = match http.get(format!("{}/status", driver.url)).send().await {
            Ok(r) => r.json::<Value>().await.is_ok_and(|v| v["value"]["ready"] == true),
            Err(_) => false,
        };
        if ready {
            return driver;
        }
        assert!(Instant::now() < deadline, "chromedriver did not answer in 30 s:\n{}", driver_log(driver.dir.path()));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A headless Chromium session with a fresh profile and Google's background traffic off.
async fn open_browser() -> (Driver, Client) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let driver = start_driver().await;
    let profile = driver.dir.path().join("profile");
    let args = [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1024,800",
        &format!("--user-data-dir={}", profile.display()),
    ];
    let mut caps = serde_json::Map::new();
    caps.insert("goog:chromeOptions".into(), json!({"binary": CHROMIUM, "args": args}));
    let client = ClientBuilder::rustls()
        .expect("TLS roots for the WebDriver client")
        .capabilities(caps)
        .connect(&driver.url)
        .await
        .unwrap_or_else(|e| {
            panic!("cannot start Chromium through chromedriver: {e}\n{}", driver_log(driver.dir.path()))
        });
    (driver, client)
}

/// Runs `script` (a function body) in the page and returns its result.
async fn js(page: &Client, script: &str) -> Value {
    page.execute(script, vec![]).await.unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
}

/// What the page shows, for failure messages.
async fn describe(page: &Client) -> String {
    let v = page
        .execute(
            "const q = (s) => document.querySelector(s);
             return {
               messages: [...document.querySelectorAll('#messages .msg')].map((m) => ({
                 id: m.dataset.id, class: m.className, text: m.querySelector('.text').textContent,
                 buttons: [...m.querySelectorAll('.buttons button')].map((b) => b.textContent + (b.disabled ? ' (disabled)' : '')),
               })),
               status: q('#status') && !q('#status').hidden ? q('#status').textContent : null,
               banner: q('#llm-banner') && !q('#llm-banner').hidden ? q('#llm-banner').textContent : null,
             };",
            vec![],
        )
        .await;
    match v {
        Ok(v) => serde_json::to_string_pretty(&v).unwrap_or_default(),
        Err(e) => format!("(cannot read the page: {e})"),
    }
}

/// Polls `script` until it returns something other than null, undefined or false, and returns
/// that; fails after [`TIMEOUT`] with what the page shows.
async fn wait_js(page: &Client, what: &str, script: &str) -> Value {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let v = js(page, script).await;
        if !(v.is_null() || v == Value::Bool(false)) {
            return v;
        }
        if Instant::now() > deadline {
            panic!("timed out waiting for {what}; the page shows:\n{}", describe(page).await);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Loads the page and waits until it has read /api/v1/info (the model line is filled in).
async fn load_page(page: &Client, app: &TestApp) {
    page.goto(&app.url("/")).await.expect("open the page");
    wait_js(page, "the page to load /api/v1/info", "return document.getElementById('model').textContent || null;")
        .await;
}

/// Types `text` into the message box and presses Enter.
async fn send_message(page: &Client, text: &str) {
    let input = page.find(Locator::Css("textarea#input")).await.expect("textarea#input");
    wait_enabled(page, &input).await;
    input.send_keys(text).await.expect("type the message");
    input.send_keys(&Key::Enter.to_string()).await.expect("press Enter");
}

async fn wait_enabled(page: &Client, el: &Element) {
    let deadline = Instant::now() + TIMEOUT;
    while !el.is_enabled().await.expect("is_enabled") {
        if Instant::now() > deadline {
            panic!("timed out waiting for the input to be enabled:\n{}", describe(page).await);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the last assistant message is final (not streaming, no buttons) and its text
/// satisfies `condition` (a JS expression over `t`); returns the text.
async fn wait_final_reply(page: &Client, what: &str, condition: &str) -> String {
    let script = format!(
        "const all = document.querySelectorAll('#messages .msg.assistant');
         const m = all[all.length - 1];
         if (!m || m.classList.contains('streaming') || m.querySelector('.buttons button')) return null;
         const t = m.querySelector('.text').textContent;
         return ({condition}) ? t : null;"
    );
    wait_js(page, what, &script).await.as_str().expect("text").to_string()
}

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
    stop.click().await.expect("click Stop");

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
