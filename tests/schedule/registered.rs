//! A channel registered in one place: `memchat`, a minimal in-memory chat platform defined
//! only here (a `Channel` and its `Platform` entry), registered with one line
//! (`Registry::with`), configured by its own `[channels.memchat]` section in the config TOML.
//! It then receives a message and answers it, shows approval buttons for a risky tool call
//! (a click approves it), and takes a scheduled briefing from `[[schedules]]` (the target passes
//! the config check because the registry says the channel runs). No file of Butler knows it.

use crate::support::app::{config, TestApp};
use crate::support::fake_llm::{FakeLlm, Reply};
use crate::support::touch::Touch;
use crate::{eventually, set_next};
use async_trait::async_trait;
use butler::app::{App, AppOptions};
use butler::channel::{
    Actor, Button, Caps, Channel, ChannelError, ConversationKind, EventBody, EventId, Identity, InboundEvent, Ingress,
    MessageRef, Outbound, TextFormat,
};
use butler::channels::{BuildError, Built, Check, Context, Platform};
use butler::config::{Env, Problems};
use butler::store::{now_ms, ScheduleFilter};
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One message as memchat shows it.
#[derive(Clone, Debug)]
struct Shown {
    id: String,
    conversation: String,
    text: String,
    buttons: Vec<Button>,
}

/// The platform: what Butler sent, and the ingress its events go to once built.
#[derive(Default)]
struct MemChat {
    shown: Mutex<Vec<Shown>>,
    ingress: Mutex<Option<Arc<dyn Ingress>>>,
    next: AtomicU64,
}

impl MemChat {
    /// `user` does something in their DM with the bot.
    async fn event(&self, user: &str, body: EventBody) {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let event = InboundEvent {
            id: EventId(format!("memchat:{n}:{}", uuid::Uuid::new_v4().simple())),
            actor: Actor { identity: Identity::new("memchat", user), display_name: None, is_bot: false },
            conversation: format!("memchat:{user}").parse().unwrap(),
            kind: ConversationKind::Direct,
            addressed: true,
            reply_to: None,
            message_id: Some(format!("in{n}")),
            body,
            at_ms: 0,
            attachments: Vec::new(),
        };
        let ingress = self.ingress.lock().unwrap().clone().expect("memchat is built");
        ingress.accept(event).await.expect("accepted");
    }

    async fn say(&self, user: &str, text: &str) {
        self.event(user, EventBody::Message { text: text.into() }).await;
    }

    async fn click(&self, user: &str, action: &str, message: &str) {
        let body = EventBody::Action { action: action.into(), message: Some(message.into()), interaction: None };
        self.event(user, body).await;
    }

    /// Waits until a message in `conversation` (an id on memchat) satisfies `pred`.
    async fn wait(&self, conversation: &str, pred: impl Fn(&Shown) -> bool) -> Shown {
        let full = format!("memchat:{conversation}");
        for _ in 0..1600 {
            let shown = self.shown.lock().unwrap().clone();
            if let Some(m) = shown.into_iter().find(|m| m.conversation == full && pred(m)) {
                return m;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("nothing fitting in {full}: {:#?}", self.shown.lock().unwrap());
    }
}

#[async_trait]
impl Channel for MemChat {
    fn name(&self) -> &str {
        "memchat"
    }

    fn caps(&self) -> Caps {
        Caps {
            buttons: true,
            edit: true,
            max_len: 4000,
            typing: false,
            min_edit_interval: Duration::from_millis(50),
            format: TextFormat::Plain,
            exclusive: false,
            reply_window: false,
        }
    }

    async fn send(&self, msg: &Outbound) -> Result<MessageRef, ChannelError> {
        let id = format!("out{}", self.next.fetch_add(1, Ordering::Relaxed));
        let shown = Shown {
            id: id.clone(),
            conversation: msg.conversation.to_string(),
            text: msg.text.clone(),
            buttons: msg.buttons.clone(),
        };
        self.shown.lock().unwrap().push(shown);
        Ok(MessageRef { conversation: msg.conversation.clone(), id })
    }

    async fn edit(&self, target: &MessageRef, msg: &Outbound) -> Result<(), ChannelError> {
        let mut shown = self.shown.lock().unwrap();
        let m =
            shown.iter_mut().find(|m| m.id == target.id).ok_or_else(|| ChannelError::NotFound(target.id.clone()))?;
        m.text.clone_from(&msg.text);
        m.buttons.clone_from(&msg.buttons);
        Ok(())
    }
}

/// `[channels.memchat]`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Section {
    /// The memchat room briefings may go to.
    room: String,
}

/// memchat's registry entry: the platform it builds is the test's.
struct Entry(Arc<MemChat>);

#[async_trait]
impl Platform for Entry {
    const NAME: &'static str = "memchat";
    type Section = Section;

    fn check(&self, section: &Section, p: &mut Problems) {
        if section.room.trim().is_empty() {
            p.add("channels.memchat.room", "must name a room");
        }
    }

    fn refuse_target(&self, section: &Section, conversation: &butler::channel::ConversationRef) -> Option<String> {
        (conversation.id != section.room).then(|| format!("memchat delivers briefings only to {}", section.room))
    }

    async fn build(&self, _section: Section, cx: &Context<'_>, built: &mut Built) -> Result<(), BuildError> {
        *self.0.ingress.lock().unwrap() = Some(cx.ingress.clone());
        built.channels.push(self.0.clone());
        Ok(())
    }

    async fn doctor(&self, section: &Section) -> Check {
        ("memchat".into(), Ok(format!("room {}", section.room)))
    }
}

const SECTIONS: &str = "[channels.memchat]\nroom = \"lobby\"\n\n\
                        [access]\nowners = [\"memchat:alice\"]\n\n\
                        [[schedules]]\nname = \"morning\"\ncron = \"0 7 * * *\"\n\
                        prompt = \"mem-brief: what is on today?\"\ntarget = \"memchat:lobby\"\n";

#[tokio::test]
async fn a_channel_registered_with_one_line_chats_asks_and_takes_briefings() {
    let llm = FakeLlm::start().await;
    let (mut cfg, dir) = config(Some(&llm.openai_url()));
    let written = butler::config::parse_str(SECTIONS, "test", &Env::default()).expect("the sections parse");
    (cfg.channels, cfg.access, cfg.schedules) = (written.channels, written.access, written.schedules);
    let chat = Arc::new(MemChat::default());

    // The one line that registers it.
    let registry = butler::channels::builtin().with(Entry(chat.clone()));

    // The config check knows it (and its schedule target) through the registry, and only then.
    butler::app::check_config_with(&cfg, &registry).expect("memchat's section and target pass");
    let plain = butler::app::check_config(&cfg).expect_err("without the entry").to_string();
    assert!(plain.contains("channels.memchat") && plain.contains("web, telegram"), "{plain}");
    let mut elsewhere = cfg.clone();
    elsewhere.schedules[0].target = "memchat:kitchen".parse().unwrap();
    let refused = butler::app::check_config_with(&elsewhere, &registry).expect_err("its own target rule").to_string();
    assert!(refused.contains("schedules[0].target") && refused.contains("only to lobby"), "{refused}");
    assert_eq!(registry.doctor(&cfg.channels).await, [("memchat".to_string(), Ok("room lobby".to_string()))]);

    let touch = Touch::new();
    let mut opts = AppOptions::serve(cfg.clone());
    opts.extra_tools = vec![touch.clone()];
    opts.channels = registry;
    let app = App::start(opts).await.expect("app starts");
    let base = format!("http://{}", app.addr.expect("listening"));
    let app = TestApp { app, config: cfg, base, http: reqwest::Client::new(), _dir: Some(dir) };

    // A message, answered.
    llm.on("mem-hello", Reply::text("Hello from Butler."));
    chat.say("alice", "mem-hello").await;
    chat.wait("alice", |m| m.text == "Hello from Butler.").await;

    // A risky call: the approval buttons reach memchat, a click approves, the tool runs.
    llm.on("mem-touch", Reply::tool_call("touch", json!({"name": "lamp"})));
    llm.on("mem-touch", Reply::text("The lamp is touched."));
    chat.say("alice", "mem-touch").await;
    let request = chat.wait("alice", |m| m.buttons.iter().any(|b| b.action.starts_with("ap:"))).await;
    let approve = request.buttons.iter().find(|b| b.action.ends_with(":once")).expect("an approve button");
    assert_eq!(touch.runs(), 0, "nothing runs before the click");
    chat.click("alice", &approve.action, &request.id).await;
    chat.wait("alice", |m| m.text == "The lamp is touched.").await;
    assert_eq!(touch.runs(), 1);

    // The scheduled briefing from [[schedules]], due now, delivered to the memchat room.
    llm.on("mem-brief", Reply::text("Good morning: two meetings today."));
    let store = app.app.store.clone();
    let jobs = || async { store.schedules_list(&ScheduleFilter::Scope("config".into())).await.unwrap() };
    eventually("the config job stored at start", || async { !jobs().await.is_empty() }).await;
    set_next(&*store, jobs().await[0].id, now_ms()).await;
    chat.wait("lobby", |m| m.text == "Good morning: two meetings today.").await;
    app.stop().await;
}
