//! The browser harness of the page tests: a chromedriver per test in its own process group
//! (killed by a guard, also when the test panics), a headless Chromium with a fresh profile,
//! and small helpers to run JavaScript on the page and wait for what it shows.

use crate::support::app::TestApp;
use fantoccini::actions::{InputSource, MouseActions, PointerAction, MOUSE_BUTTON_LEFT};
use fantoccini::elements::Element;
use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio::sync::{Semaphore, SemaphorePermit};

pub(super) const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
pub(super) const CHROMIUM: &str = "/usr/bin/chromium";
/// How long any one expected page state may take to appear (generous: 2 shared cores).
pub(super) const TIMEOUT: Duration = Duration::from_secs(45);

/// At most two browsers at once: the machine is small and the other tests run alongside.
pub(super) static BROWSERS: Semaphore = Semaphore::const_new(2);

/// A running chromedriver. Dropping it kills its whole process group (the driver and the
/// Chromium it started), also when a test panics.
pub(super) struct Driver {
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

pub(super) fn driver_log(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("chromedriver.log")).unwrap_or_default()
}

pub(super) fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local address").port()
}

/// Starts chromedriver on a free port and waits until it reports ready.
pub(super) async fn start_driver() -> Driver {
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
pub(super) async fn open_browser() -> (Driver, Client) {
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
pub(super) async fn js(page: &Client, script: &str) -> Value {
    page.execute(script, vec![]).await.unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
}

/// What the page shows, for failure messages.
pub(super) async fn describe(page: &Client) -> String {
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
pub(super) async fn wait_js(page: &Client, what: &str, script: &str) -> Value {
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
pub(super) async fn load_page(page: &Client, app: &TestApp) {
    page.goto(&app.url("/")).await.expect("open the page");
    wait_js(page, "the page to load /api/v1/info", "return document.getElementById('model').textContent || null;")
        .await;
}

/// Types `text` into the message box and presses Enter.
pub(super) async fn send_message(page: &Client, text: &str) {
    let input = page.find(Locator::Css("textarea#input")).await.expect("textarea#input");
    wait_enabled(page, &input).await;
    input.send_keys(text).await.expect("type the message");
    input.send_keys(&Key::Enter.to_string()).await.expect("press Enter");
}

pub(super) async fn wait_enabled(page: &Client, el: &Element) {
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
pub(super) async fn wait_final_reply(page: &Client, what: &str, condition: &str) -> String {
    let script = format!(
        "const all = document.querySelectorAll('#messages .msg.assistant');
         const m = all[all.length - 1];
         if (!m || m.classList.contains('streaming') || m.querySelector('.buttons button')) return null;
         const t = m.querySelector('.text').textContent;
         return ({condition}) ? t : null;"
    );
    wait_js(page, what, &script).await.as_str().expect("text").to_string()
}

/// A click as a person makes it: the pointer moves onto `el`, goes down, stays down for `hold`
/// (WebDriver's own click releases at once), and comes up where it is.
pub(super) async fn held_click(page: &Client, el: &Element, hold: Duration) {
    let mouse = MouseActions::new("held-click".into())
        .then(PointerAction::MoveToElement { element: el.clone(), duration: None, x: 0.0, y: 0.0 })
        .then(PointerAction::Down { button: MOUSE_BUTTON_LEFT })
        .then(PointerAction::Pause { duration: hold })
        .then(PointerAction::Up { button: MOUSE_BUTTON_LEFT });
    page.perform_actions(mouse).await.expect("perform the held click");
    page.release_actions().await.expect("release the pointer");
}
