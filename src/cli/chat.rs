//! `butler chat`: a terminal conversation as `cli:local`, through the same ingress, triage,
//! sessions, outbox and store as every other channel. Replies stream in as they are written,
//! Markdown rendered for a terminal (`render.rs`); Ctrl-C stops the running turn; Ctrl-D (end of
//! input) waits for outstanding replies and exits.
//!
//! The conversation owns stdout: log lines go to a file (see `cli::chat_log`), the prompt is
//! shown only when a person types at a terminal and is cleared before a reply is written, so it
//! never stands in front of one.

use super::exit;
use super::render::{Markdown, Mode};
use crate::app::{App, AppOptions};
use crate::config::Config;
use async_trait::async_trait;
use butler_channel::{
    Accepted, Actor, Caps, Channel, ChannelError, ConversationKind, ConversationRef, EventBody, EventId, Identity,
    InboundEvent, MessageRef, Outbound, TextFormat,
};
use std::collections::HashMap;
use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

const CHANNEL: &str = "cli";
const PROMPT: &str = "› ";

/// What the terminal can do: Markdown rendered here, so an approval request carries the whole
/// of what the call would do (the terminal prints it; it scrolls).
pub(super) const CAPS: Caps = Caps {
    // Buttons are shown as a y/a/n question.
    buttons: true,
    edit: true,
    max_len: 1_000_000,
    typing: false,
    min_edit_interval: Duration::from_millis(30),
    format: TextFormat::Markdown,
    exclusive: false,
    reply_window: false,
};

/// Prints replies to stdout. A terminal cannot edit what it printed, so each edit prints only
/// what was added; the status line of running tools is left out.
pub struct Terminal {
    next_id: AtomicU64,
    /// Per message: the text printed so far and its renderer.
    printed: Mutex<HashMap<String, (String, Markdown)>>,
    /// The approval the next y/a/n line answers, with the message it was shown in.
    asking: Mutex<Option<(String, String)>>,
    mode: Mode,
    /// A person types at a terminal: show the prompt.
    interactive: bool,
    /// The prompt is on the screen with nothing typed after it yet.
    prompting: AtomicBool,
}

impl Terminal {
    fn new(mode: Mode, interactive: bool) -> Self {
        Self {
            next_id: AtomicU64::new(0),
            printed: Mutex::default(),
            asking: Mutex::default(),
            mode,
            interactive,
            prompting: AtomicBool::new(false),
        }
    }

    /// Shows the prompt (only to a person at a terminal).
    fn prompt(&self, out: &mut impl Write) {
        if self.interactive {
            let _ = write!(out, "{PROMPT}");
            self.prompting.store(true, Ordering::SeqCst);
        }
        let _ = out.flush();
    }

    /// A line was typed: the prompt is no longer alone on its line.
    fn typed(&self) {
        self.prompting.store(false, Ordering::SeqCst);
    }

    /// Before a reply is written: takes an unanswered prompt off the screen.
    fn clear_prompt(&self, out: &mut impl Write) {
        if self.prompting.swap(false, Ordering::SeqCst) {
            let _ = write!(out, "\r\x1b[K");
        }
    }
}

/// The part of a draft worth printing: without the trailing "running tools" line.
fn visible(text: &str) -> &str {
    match text.rfind("\n\n_⚙ running") {
        Some(i) => &text[..i],
        None if text.starts_with("_⚙ running") => "",
        None => text,
    }
}

impl Terminal {
    fn show(&self, id: &str, msg: &Outbound) {
        let text = if msg.draft { visible(&msg.text) } else { msg.text.as_str() };
        let mut printed = self.printed.lock().unwrap_or_else(|p| p.into_inner());
        let (before, md) = printed.entry(id.to_string()).or_insert_with(|| (String::new(), Markdown::new(self.mode)));
        let mut rendered = match text.strip_prefix(before.as_str()) {
            Some(added) => md.push(added),
            None => {
                *md = Markdown::new(self.mode);
                format!("\n{}", md.push(text))
            }
        };
        if !msg.draft {
            rendered.push_str(&md.finish());
        }
        *before = text.to_string();
        let mut out = std::io::stdout().lock();
        if !rendered.is_empty() {
            self.clear_prompt(&mut out);
            let _ = out.write_all(rendered.as_bytes());
        }
        // An approval's buttons end in `:once`; a question's (`ask_user`) in the option's number,
        // shown numbered here: a typed number or any other reply answers it.
        let approval = msg.buttons.iter().find_map(|b| {
            let (id, choice) = b.action.strip_prefix("ap:")?.split_once(':')?;
            (choice == "once").then(|| id.to_string())
        });
        let options: Vec<String> = msg
            .buttons
            .iter()
            .filter(|b| {
                b.action.starts_with("ap:") && b.action.rsplit(':').next().is_some_and(|n| n.parse::<usize>().is_ok())
            })
            .enumerate()
            .map(|(n, b)| format!("{}. {}", n + 1, b.label))
            .collect();
        if !options.is_empty() && !msg.draft {
            self.clear_prompt(&mut out);
            let _ = write!(out, "\n{} - reply with a number or your own words", options.join("  "));
        }
        let mut asking = self.asking.lock().unwrap_or_else(|p| p.into_inner());
        match approval {
            Some(approval) if !msg.draft => {
                *asking = Some((approval, id.to_string()));
                self.clear_prompt(&mut out);
                let _ = write!(out, "\nApprove? [y] once, [a] always in this session, [n] no: ");
            }
            _ => {
                if asking.as_ref().is_some_and(|(_, shown_in)| shown_in == id) {
                    *asking = None;
                }
                if !msg.draft {
                    let _ = write!(out, "\n\n");
                    self.prompt(&mut out);
                }
            }
        }
        let _ = out.flush();
    }

    /// The button action a y/a/n answer stands for, if an approval is being asked.
    fn answer(&self, line: &str) -> Option<String> {
        let asking = self.asking.lock().unwrap_or_else(|p| p.into_inner());
        let (id, _) = asking.as_ref()?;
        let choice = match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => "once",
            "a" | "always" => "session",
            "n" | "no" => "deny",
            _ => return None,
        };
        Some(format!("ap:{id}:{choice}"))
    }
}

#[async_trait]
impl Channel for Terminal {
    fn name(&self) -> &str {
        CHANNEL
    }

    fn caps(&self) -> Caps {
        CAPS
    }

    async fn send(&self, msg: &Outbound) -> Result<MessageRef, ChannelError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed).to_string();
        if msg.private_to.is_some() && msg.text.is_empty() {
            return Ok(MessageRef { conversation: msg.conversation.clone(), id });
        }
        self.show(&id, msg);
        Ok(MessageRef { conversation: msg.conversation.clone(), id })
    }

    async fn edit(&self, target: &MessageRef, msg: &Outbound) -> Result<(), ChannelError> {
        self.show(&target.id, msg);
        Ok(())
    }
}

pub async fn run(
    mut cfg: Config,
    config_path: Option<std::path::PathBuf>,
    log: Option<std::path::PathBuf>,
) -> Result<ExitCode, ExitCode> {
    use std::io::IsTerminal;
    cfg.channels.web.enabled = false;
    let interactive = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let terminal = Arc::new(Terminal::new(Mode::detect(), interactive));
    eprintln!("database: {}", crate::store::redact_url(cfg.database.url.expose()));
    if let Some(log) = &log {
        eprintln!("logs: {}", log.display());
    }
    let model_problem = super::model::setup_problem(&cfg.llm).await;
    let self_call = super::model::points_at_butler(&cfg);
    let channel: Arc<dyn Channel> = terminal.clone();
    let opts = AppOptions { http: false, extra_channels: vec![channel], config_path, ..AppOptions::serve(cfg) };
    let app = App::start(opts).await.map_err(|e| exit::fail(1, e))?;
    for note in model_problem.iter().chain(&self_call) {
        eprintln!("note: {note}");
    }
    eprintln!("Butler chat as cli:local. Ctrl-C stops a reply, Ctrl-D exits.");
    terminal.prompt(&mut std::io::stdout().lock());

    let conversation = ConversationRef::new(CHANNEL, "local");
    let key = format!("dm:{conversation}:local");
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut sent: Vec<String> = Vec::new();
    loop {
        tokio::select! {
            line = lines.next_line() => match line {
                Ok(Some(line)) if line.trim().is_empty() => {
                    terminal.typed();
                    terminal.prompt(&mut std::io::stdout().lock());
                }
                Ok(Some(line)) => {
                    terminal.typed();
                    let id = format!("{CHANNEL}:{}", uuid::Uuid::new_v4());
                    let body = match terminal.answer(&line) {
                        Some(action) => EventBody::Action { action, message: None, interaction: None },
                        None => EventBody::Message { text: line },
                    };
                    let ev = InboundEvent {
                        id: EventId(id.clone()),
                        actor: Actor::new(Identity::new(CHANNEL, "local")),
                        conversation: conversation.clone(),
                        kind: ConversationKind::Direct,
                        addressed: true,
                        reply_to: None,
                        message_id: None,
                        body,
                        at_ms: crate::store::now_ms(),
                        attachments: Vec::new(),
                    };
                    match app.ingress.accept(ev).await {
                        Ok(Accepted::New) => sent.push(id),
                        Ok(Accepted::Duplicate) => {}
                        Err(e) => eprintln!("error: {e}"),
                    }
                }
                Ok(None) | Err(_) => break,
            },
            _ = tokio::signal::ctrl_c() => {
                if app.sessions.stop(&key, None) {
                    eprintln!("\n(stopping…)");
                } else {
                    terminal.typed();
                    eprintln!("\n(nothing is running; Ctrl-D exits)");
                    terminal.prompt(&mut std::io::stdout().lock());
                }
            }
        }
    }
    wait_for_replies(&app, &sent).await;
    app.shutdown().await;
    println!();
    Ok(ExitCode::SUCCESS)
}

/// After end of input: waits until every message typed has been answered and delivered, as the
/// store's outcome of each says (Ctrl-C gives up waiting). It is told when an event settles or
/// its reply is delivered, and reads again only then (or after a while, should it miss one).
async fn wait_for_replies(app: &App, sent: &[String]) {
    let mut news = app.store.settled();
    let settled = async {
        for id in sent {
            loop {
                let done = match app.store.event_outcome(id).await {
                    Ok(Some(outcome)) => outcome.finished() && outcome.delivered(),
                    Ok(None) | Err(_) => true,
                };
                if done {
                    break;
                }
                let _ = tokio::time::timeout(Duration::from_secs(1), news.recv()).await;
            }
        }
    };
    tokio::select! {
        _ = settled => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
