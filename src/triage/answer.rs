//! Commands answered in triage, without the model: status, identity, pairing, links and the
//! text fallback for approvals. Owner-only commands refuse everyone else politely.

use super::access::Access;
use super::access::{approve_pairing, approved_earlier, deny_pairing, normalize_code};
use super::approvals::Approvals;
use super::commands::HELP;
use super::commands::{Command, MemoryCommand, PairCommand};
use super::verdict::{Decision, Verdict};
use crate::schedule::Schedules;
use crate::session::Sessions;
use crate::store::{now_ms, CodeKind, MemoryScope, StoreError, UserRole, UserRow};
use butler_channel::{ConversationKind, InboundEvent};
use std::sync::Arc;

fn reply(text: impl Into<String>) -> Verdict {
    Verdict::plain(Decision::Reply { text: text.into() })
}

/// Answers commands.
#[derive(Clone)]
pub(super) struct Answers {
    pub(super) store: super::stores::TriageStores,
    pub(super) access: Arc<Access>,
    pub(super) sessions: Sessions,
    /// Scheduled jobs (`/schedules`).
    pub(super) schedules: Arc<Schedules>,
    /// `/approve ID`, `/deny ID` and `/stop` while a turn waits.
    pub(super) approvals: Approvals,
    /// What `/tools` lists.
    pub(super) tools: crate::mcp::ToolsOverview,
    /// The model name shown by /status.
    pub(super) model: String,
    /// Default time zone for users approved through pairing.
    pub(super) timezone: String,
    /// `/tasks`, `/cancel` and the helpers line of `/status`.
    pub(super) tasks: super::tasks::Tasks,
    /// `/usage`.
    pub(super) usage: crate::usage::Usage,
    /// `/sessions` and `/resume N`.
    pub(super) conversations: super::conversations::Conversations,
}

impl Answers {
    pub(super) async fn command(
        &self,
        cmd: Command,
        event: &InboundEvent,
        user: &UserRow,
        key: &str,
    ) -> Result<Verdict, StoreError> {
        Ok(match cmd {
            Command::Help => reply(HELP),
            Command::Stop => self.stop(event, key).await?,
            Command::Status => reply(self.status(key, user).await?),
            Command::Tools => reply(self.tools.render()),
            Command::WhoAmI => reply(self.whoami(event, user).await?),
            Command::Schedules => reply(self.schedules.describe_for(user).await?),
            Command::Memory(cmd) => reply(self.memory(cmd, event, user).await?),
            Command::Link(None) => self.offer_link(event, user).await?,
            Command::Pair(pair) => self.pair(pair, event, user).await?,
            Command::Approve(None) | Command::Deny(None) => reply("Say which approval: `/approve ID` or `/deny ID`."),
            Command::Approve(Some(id)) => self.approvals.approval_answer(event, &format!("{id}:once")).await?,
            Command::Deny(Some(id)) => self.approvals.approval_answer(event, &format!("{id}:deny")).await?,
            Command::Tasks => reply(self.tasks.list(user).await?),
            Command::Cancel(None) => reply("Say which task: `/cancel ID` (/tasks lists them)."),
            Command::Cancel(Some(id)) => reply(self.tasks.cancel(user, &id).await?),
            Command::Timezone(zone) => reply(self.timezone(zone, user).await?),
            Command::Usage => reply(crate::usage::render(&self.usage.report(user, now_ms()).await?)),
            Command::Sessions => reply(self.conversations.list(event, user, key).await?),
            // Handled before this point; listed so the match stays exhaustive.
            Command::New | Command::Compact | Command::Resume(_) | Command::Unknown | Command::Link(Some(_)) => {
                Verdict::plain(Decision::Done)
            }
        })
    }

    /// `/stop`: the background work of the session (its chains: running tasks stop, their
    /// reports start no turn), the running turn (it says it stopped), or the approvals a parked
    /// turn waits for.
    async fn stop(&self, event: &InboundEvent, key: &str) -> Result<Verdict, StoreError> {
        let halted = self.tasks.halt_session(key);
        if self.sessions.stop(key, None) {
            // The turn says "Stopped" as it ends, unless it was already finishing its answer:
            // halted background tasks are confirmed here either way.
            return Ok(match halted {
                0 => Verdict::plain(Decision::Done),
                _ => reply("⏹ Stopped the background tasks of this conversation."),
            });
        }
        Ok(match self.approvals.cancel_waiting(event, key).await? {
            Some(verdict) => verdict,
            None if halted > 0 => reply("⏹ Stopped the background tasks of this conversation."),
            None => reply("Nothing is running."),
        })
    }

    async fn status(&self, key: &str, user: &UserRow) -> Result<String, StoreError> {
        let session = self.store.sessions.session_active(key).await?;
        let since = crate::usage::day_start_ms(&user.timezone, now_ms());
        let usage = self.store.turns.usage_since(&user.id, since).await?;
        let running = if self.sessions.is_running(key) { "a turn is running" } else { "idle" };
        let context = match &session {
            Some(s) => self.store.turns.last_context(&s.id).await?,
            None => 0,
        };
        let context = match (self.model.is_empty(), context) {
            (true, _) => "nothing sent (no model is configured)".to_string(),
            (false, 0) => "no model request yet".to_string(),
            (false, n) => format!("about {n} tokens in the last request"),
        };
        let today = match (self.model.is_empty(), usage.turns) {
            (true, _) => "no model calls (no model is configured)".to_string(),
            (false, 0) => "no model calls yet".to_string(),
            (false, n) => format!(
                "{n} {}, {} tokens in, {} tokens out, ${:.4}",
                if n == 1 { "turn" } else { "turns" },
                usage.input_tokens,
                usage.output_tokens,
                usage.cost_usd
            ),
        };
        let helpers = match &session {
            Some(s) => self.tasks.running_in(user, &s.id).await?,
            None => String::new(),
        };
        let mut text = format!(
            "Session: {} ({running})\nModel: {}\nContext: {context}\nToday: {today}{helpers}",
            session.map_or_else(|| "none yet".to_string(), |s| format!("`{}`", &s.id[..8.min(s.id.len())])),
            if self.model.is_empty() { "not configured" } else { &self.model },
        );
        if user.role == UserRole::Owner {
            let counts = self.store.audit.decisions_since(since).await?;
            let pending = self.store.codes.codes_live(CodeKind::Pair, now_ms()).await?.len();
            let summary = if counts.is_empty() {
                "none".to_string()
            } else {
                counts.iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", ")
            };
            text.push_str(&format!("\nTriage today: {summary}\nPairing requests waiting: {pending}"));
            let failed = self.store.dead_letters.inbox_count(crate::store::InboxStatus::Failed).await?;
            if failed > 0 {
                text.push_str(&format!("\n⚠️ Failed events: {failed} (see `butler inbox list --failed`)"));
            } else {
                text.push_str("\nFailed events: 0");
            }
            let recent = self.store.audit.decisions_recent(5).await?;
            for d in recent {
                text.push_str(&format!("\n- {} `{}`: {}", d.decision, d.actor, d.reason));
            }
        }
        Ok(text)
    }

    /// `/memory`: the memories of this conversation's scope (personal in a DM, the user's own
    /// share of the group inside a group).
    async fn memory(&self, cmd: MemoryCommand, event: &InboundEvent, user: &UserRow) -> Result<String, StoreError> {
        let owner = match event.kind {
            ConversationKind::Direct => MemoryScope::personal(&user.id),
            ConversationKind::Group => MemoryScope::group(&user.id, &event.conversation.to_string()),
        };
        let pinned: Vec<i64> = match event.kind {
            ConversationKind::Direct => self.store.profiles.memory_pins(&user.id).await?.iter().map(|m| m.id).collect(),
            ConversationKind::Group => Vec::new(),
        };
        let list = |rows: Vec<crate::store::MemoryRow>, empty: &str| {
            if rows.is_empty() {
                return empty.to_string();
            }
            let line = |m: &crate::store::MemoryRow| {
                let pin = if pinned.contains(&m.id) { "📌 " } else { "" };
                format!("{pin}[memory {}] {}", m.id, m.text)
            };
            rows.iter().map(line).collect::<Vec<_>>().join("\n")
        };
        Ok(match cmd {
            MemoryCommand::List => {
                list(self.store.memory.memory_list(&owner, 20).await?, "I don't remember anything about you here yet.")
            }
            MemoryCommand::Search(q) => {
                list(self.store.memory.memory_search(&owner, &q, 10).await?, "No memories match.")
            }
            MemoryCommand::Forget(id) if self.store.memory.memory_forget(&owner, id).await? => {
                format!("Forgot memory {id}.")
            }
            MemoryCommand::Forget(id) => format!("There is no memory {id} of yours here."),
            MemoryCommand::Pin(..) if event.kind == ConversationKind::Group => {
                "Pins are personal: pin a memory from a private chat with me.".to_string()
            }
            MemoryCommand::Pin(id, pin) if self.store.profiles.memory_pin(&user.id, id, pin).await? => match pin {
                true => format!(
                    "📌 Pinned memory {id}: I will always know it, from your next conversation on (`/new` starts one)."
                ),
                false => format!("Unpinned memory {id}: it is recalled only when it matters again."),
            },
            MemoryCommand::Pin(id, _) => format!("There is no memory {id} of yours to pin (see `/memory`)."),
            MemoryCommand::Usage => {
                "Use `/memory`, `/memory search WORDS`, `/memory forget ID` or `/memory pin ID` (`unpin`).".to_string()
            }
        })
    }

    /// `/timezone`: the sender's zone, or set it (an IANA name) for every account of theirs.
    async fn timezone(&self, zone: Option<String>, user: &UserRow) -> Result<String, StoreError> {
        let Some(zone) = zone else {
            return Ok(format!(
                "Your time zone is {}. Set another with `/timezone Europe/Berlin` (an IANA name).",
                user.timezone
            ));
        };
        let Ok(tz) = zone.parse::<chrono_tz::Tz>() else {
            return Ok(format!(
                "`{zone}` is not a time zone I know: use an IANA name such as Europe/Berlin, America/New_York or \
                 Asia/Tokyo."
            ));
        };
        self.store.profiles.user_set_timezone(&user.id, tz.name()).await?;
        // Every account of theirs sees the new zone at once, on every replica.
        for id in self.store.users.user_identities(&user.id).await? {
            self.access.changed(&id).await;
        }
        let now = chrono::Utc::now().with_timezone(&tz);
        Ok(format!(
            "🕗 Your time zone is now {} (it is {} there). Reminders and briefings you set from now on use it.",
            tz.name(),
            now.format("%H:%M")
        ))
    }

    async fn whoami(&self, event: &InboundEvent, user: &UserRow) -> Result<String, StoreError> {
        let linked = self.store.users.user_identities(&user.id).await?;
        let others: Vec<String> =
            linked.iter().filter(|i| **i != event.actor.identity).map(|i| format!("`{i}`")).collect();
        let mut text = format!(
            "You are `{}` (user `{}`, role {}, time zone {}).",
            event.actor.identity,
            user.id,
            user.role.as_str(),
            user.timezone
        );
        if !others.is_empty() {
            text.push_str(&format!(" Linked accounts: {}.", others.join(", ")));
        }
        Ok(text)
    }

    async fn offer_link(&self, event: &InboundEvent, user: &UserRow) -> Result<Verdict, StoreError> {
        if event.kind == ConversationKind::Group {
            return Ok(reply("Send /link in a private chat with me, so the code stays yours."));
        }
        let code = self.access.link_code(&*self.store.codes, event, user).await?;
        Ok(reply(format!(
            "🔗 To link another chat account to this one, send `/link {code}` to me from that account within \
             10 minutes. The code works once."
        )))
    }

    /// `/link CODE` from the account joining (which may not be known yet).
    pub(super) async fn redeem_link(&self, event: &InboundEvent, code: &str) -> Result<Verdict, StoreError> {
        let id = &event.actor.identity;
        if let Some(left) = self.access.locked(id).await {
            return Ok(locked(left));
        }
        if event.kind == ConversationKind::Group {
            return Ok(reply("Send /link in a private chat with me."));
        }
        match self.access.redeem_link(&*self.store.codes, id, code).await? {
            Some(row) => {
                self.access.right_code(id).await;
                let text = format!(
                    "🔗 Linked: `{id}` and `{}` are now the same person to me. Memory and history follow you \
                     across both.",
                    row.identity
                );
                Ok(Verdict::recorded(Decision::Reply { text }, "link", format!("{id} linked to {}", row.identity)))
            }
            None => Ok(self.wrong_code(id, "link").await),
        }
    }

    async fn wrong_code(&self, id: &butler_channel::Identity, what: &str) -> Verdict {
        let locked_now = self.access.wrong_code(id).await;
        let text = if locked_now {
            "That code is not valid, and that was too many wrong codes: try again in 15 minutes.".to_string()
        } else {
            "That code is not valid (codes work once and expire).".to_string()
        };
        Verdict::recorded(Decision::Reply { text }, "wrong_code", format!("wrong {what} code from {id}"))
    }

    async fn pair(&self, cmd: PairCommand, event: &InboundEvent, user: &UserRow) -> Result<Verdict, StoreError> {
        if user.role != UserRole::Owner {
            return Ok(reply("Only the owner can answer pairing requests."));
        }
        let id = &event.actor.identity;
        if let Some(left) = self.access.locked(id).await {
            return Ok(locked(left));
        }
        Ok(match cmd {
            PairCommand::List => {
                let codes = self.store.codes.codes_live(CodeKind::Pair, now_ms()).await?;
                if codes.is_empty() {
                    reply("No pairing requests are waiting.")
                } else {
                    let lines: Vec<String> = codes
                        .iter()
                        .map(|c| {
                            let name = c.display_name.as_deref().map(|n| format!(" ({n})")).unwrap_or_default();
                            format!("- `{}` from `{}`{name}", c.code, c.identity)
                        })
                        .collect();
                    reply(format!("Pairing requests:\n{}\nApprove with `/pair approve CODE`.", lines.join("\n")))
                }
            }
            PairCommand::Approve(code) => match approve_pairing(
                (&*self.store.codes, &*self.store.users, &*self.store.outbox),
                &code,
                &self.timezone,
            )
            .await?
            {
                Some((row, _)) => {
                    self.access.right_code(id).await;
                    if let Ok(who) = row.identity.parse() {
                        self.access.changed(&who).await;
                    }
                    let text = format!("✅ Approved `{}`: they can talk to me now.", row.identity);
                    Verdict::recorded(Decision::Reply { text }, "paired", format!("{} approved by {id}", row.identity))
                }
                None => match approved_earlier(&*self.store.outbox, &code).await? {
                    Some(who) => reply(format!("`{}` was already approved: {who} is in.", normalize_code(&code))),
                    None => self.wrong_code(id, "pairing").await,
                },
            },
            PairCommand::Deny(code) => match deny_pairing(&*self.store.codes, &code).await? {
                Some(row) => {
                    self.access.right_code(id).await;
                    let text = format!("Declined the request from `{}`.", row.identity);
                    Verdict::recorded(
                        Decision::Reply { text },
                        "declined",
                        format!("{} declined by {id}", row.identity),
                    )
                }
                None => self.wrong_code(id, "pairing").await,
            },
            PairCommand::Usage => reply("Use `/pair`, `/pair approve CODE` or `/pair deny CODE`."),
        })
    }
}

fn locked(left: std::time::Duration) -> Verdict {
    let minutes = left.as_secs().div_ceil(60).max(1);
    Verdict::recorded(
        Decision::Reply { text: format!("Too many wrong codes. Try again in {minutes} minutes.") },
        "locked",
        "sender locked out after wrong codes",
    )
}
