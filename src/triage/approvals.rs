//! Answers to approval requests: a button click (`ap:<id>:once|session|deny`), `/approve ID`,
//! `/deny ID`, `/stop` while a turn waits, and expiry; and answers to questions (`ask_user`): a
//! click on an option (`ap:<id>:<n>`) or the asked person's next message in the conversation
//! (a number picks that option, other text is the answer). Each is checked (the request exists, is
//! still pending, has not expired, and the person may decide it); the decision is taken with a
//! compare-and-swap (a second click never wins), the request's message is edited to show the
//! outcome, and the waiting turn resumes in its own session.
//!
//! A refused click must change nothing and get only a short answer.

use super::access::Access;
use super::verdict::{Decision, Verdict};
use crate::ids::SYSTEM_CHANNEL;
use crate::outbox::Deliverer;
use crate::permissions::approval::approval_key;
use crate::permissions::approval::{decide, Answer, Answerer};
use crate::session::{Job, JobKind};
use crate::store::{now_ms, ApprovalKind, ApprovalRow, StoreError, Waiting};
use butler_channel::{
    Actor, ButtonStyle, ConversationKind, ConversationRef, EventBody, Identity, InboundEvent, ANSWER_ALWAYS, ANSWER_NO,
    ANSWER_YES,
};
use std::sync::Arc;

/// What an answer to a request's message picked.
enum Pick {
    /// A reaction: the choice of this style (👍/✅ the primary one, 🔁 the plain one, 👎/❌ the
    /// danger one).
    React(ButtonStyle),
    /// The n-th choice, from 1.
    Number(usize),
}

fn refused(text: impl Into<String>, reason: impl Into<String>) -> Verdict {
    Verdict::recorded(Decision::Reply { text: text.into() }, "approval_refused", reason)
}

/// The event Butler gives itself when an approval expires.
pub fn expiry_event(row: &ApprovalRow) -> Option<InboundEvent> {
    let conversation: ConversationRef = row.conversation.parse().ok()?;
    Some(InboundEvent {
        id: butler_channel::EventId(format!("approval:{}:expired", row.id)),
        actor: butler_channel::Actor {
            identity: Identity::new(SYSTEM_CHANNEL, "approvals"),
            display_name: Some("Butler".into()),
            is_bot: false,
        },
        conversation,
        kind: ConversationKind::Direct,
        addressed: true,
        reply_to: None,
        message_id: None,
        body: EventBody::Action { action: format!("ap:{}:expire", row.id), message: None, interaction: None },
        at_ms: now_ms(),
        attachments: Vec::new(),
    })
}

/// Decides answers to approval requests.
#[derive(Clone)]
pub(super) struct Approvals {
    store: super::stores::TriageStores,
    access: Arc<Access>,
    /// Told when an approval's message was edited, so the edit goes out at once.
    deliverer: Arc<Deliverer>,
}

impl Approvals {
    pub(super) fn new(store: super::stores::TriageStores, access: Arc<Access>, deliverer: Arc<Deliverer>) -> Self {
        Self { store, access, deliverer }
    }

    /// `rest` is `<id>:<choice>`.
    pub(super) async fn approval_answer(&self, event: &InboundEvent, rest: &str) -> Result<Verdict, StoreError> {
        let who = &event.actor.identity;
        let Some((id, choice)) = rest.rsplit_once(':') else {
            return Ok(refused("That button is not valid.", format!("malformed approval action from {who}")));
        };
        let Some(row) = self.store.approvals.approval_get(id).await? else {
            return Ok(refused("That approval request does not exist.", format!("unknown approval id from {who}")));
        };
        // Butler's own expiry is nobody's click: no user to look up.
        let system = who.channel == SYSTEM_CHANNEL;
        let user = if system { None } else { self.access.user_for(&*self.store.users, who).await? };
        self.settle(event, &row, Answer::Choice(choice), user.as_ref()).await
    }

    /// An answer to a request's message on a platform without buttons (or beside them): a 👍
    /// or 👎 reaction to it (`#yes` / `#no`), or a reply quoting it whose text is a number.
    /// The request is the one delivered as that message; the number picks its n-th button, 👍
    /// its primary button, 👎 its danger button; then it is settled as a click on that button
    /// (bound to the approvers, once). `None` when the event is no such answer, or names no
    /// pending request (a numbered reply is then an ordinary message).
    pub(super) async fn message_answer(&self, event: &InboundEvent) -> Result<Option<Verdict>, StoreError> {
        let (message, pick) = match &event.body {
            EventBody::Action { action, message: Some(m), .. } => match action.as_str() {
                ANSWER_YES => (m.as_str(), Pick::React(ButtonStyle::Primary)),
                ANSWER_ALWAYS => (m.as_str(), Pick::React(ButtonStyle::Default)),
                ANSWER_NO => (m.as_str(), Pick::React(ButtonStyle::Danger)),
                _ => return Ok(None),
            },
            EventBody::Message { text } => match (&event.reply_to, text.trim().parse::<usize>()) {
                (Some(m), Ok(n)) if (1..=20).contains(&n) => (m.as_str(), Pick::Number(n)),
                _ => return Ok(None),
            },
            _ => return Ok(None),
        };
        let conversation = event.conversation.to_string();
        let found = self.store.approvals.approval_waiting(&conversation, Waiting::Message(message), now_ms()).await?;
        let reaction = matches!(pick, Pick::React(_));
        let Some(row) = found.filter(|r| r.kind != ApprovalKind::Question || !reaction) else {
            return Ok(reaction.then(|| Verdict::drop("a reaction that answers no pending request")));
        };
        if row.kind == ApprovalKind::Question {
            // A question's numbered reply is its typed answer (a number picks that option).
            // Only the person it was asked of answers it, as with any message of theirs.
            let Pick::Number(n) = pick else { return Ok(None) };
            if row.requester != event.actor.identity.to_string() {
                return Ok(None);
            }
            return Ok(Some(self.settle(event, &row, Answer::Typed(&n.to_string()), None).await?));
        }
        let buttons = match self.store.outbox.outbox_get(&approval_key(&row.id)).await? {
            Some(message) => message.buttons,
            None => Vec::new(),
        };
        let button = match pick {
            Pick::Number(n) => buttons.get(n - 1),
            Pick::React(style) => buttons.iter().find(|b| b.style == style),
        };
        let Some(rest) = button.and_then(|b| b.action.strip_prefix("ap:")) else {
            return Ok(Some(refused("That is not one of the choices.", "an answer outside the request's choices")));
        };
        Ok(Some(self.approval_answer(event, rest).await?))
    }

    /// A message that answers a question: from the person it was asked of, in the conversation
    /// where it waits, while it is pending and unexpired (one indexed query). `None` when no
    /// question waits for them there: the message is an ordinary one.
    pub(super) async fn question_answer(
        &self,
        event: &InboundEvent,
        text: &str,
    ) -> Result<Option<Verdict>, StoreError> {
        let (conversation, who) = (event.conversation.to_string(), event.actor.identity.to_string());
        let waiting = Waiting::QuestionFor(&who);
        let Some(row) = self.store.approvals.approval_waiting(&conversation, waiting, now_ms()).await? else {
            return Ok(None);
        };
        Ok(Some(self.settle(event, &row, Answer::Typed(text), None).await?))
    }

    /// `/stop` while a turn waits for approvals: they are cancelled and the turn ends.
    /// `None` when nothing waits in this session.
    pub(super) async fn cancel_waiting(&self, event: &InboundEvent, key: &str) -> Result<Option<Verdict>, StoreError> {
        let Some(session) = self.store.sessions.session_active(key).await? else { return Ok(None) };
        let mut pending = self.store.approvals.approvals_pending(&session.id).await?;
        // Approvals asked inside this session's children wait under the children's sessions.
        for (_, under) in
            crate::delegate::waiting_children((&*self.store.delegations, &*self.store.approvals), &session.id).await?
        {
            pending.extend(under);
        }
        let mut verdict = None;
        for row in pending {
            // The first cancellation resumes (and ends) the turn; the others only record.
            let v = self.settle(event, &row, Answer::Cancel, None).await?;
            if verdict.is_none() {
                verdict = Some(v);
            }
        }
        Ok(verdict)
    }

    /// Asks the approval rules what `answer` (by the event's actor, who is `user`) does to
    /// `row`; records the decision (a question's with its answer) and its audit row, edits the
    /// request, and resumes the waiting turn. A refused answer changes nothing.
    async fn settle(
        &self,
        event: &InboundEvent,
        row: &ApprovalRow,
        answer: Answer<'_>,
        user: Option<&crate::store::UserRow>,
    ) -> Result<Verdict, StoreError> {
        let identity = event.actor.identity.to_string();
        let system = event.actor.identity.channel == SYSTEM_CHANNEL;
        let who = Answerer { identity: &identity, user, name: event.actor.name(), system };
        let settled = match decide(row, answer, &who, now_ms()) {
            Ok(settled) => settled,
            Err(no) => return Ok(refused(no.text, no.reason)),
        };
        let (status, by) = (settled.decision.status, settled.decision.decided_by.as_str());
        let Some(decided) = self.store.approvals.approval_decide(&row.id, &settled.decision).await? else {
            return Ok(refused("This request was already answered.", format!("lost the race for approval {}", row.id)));
        };
        self.store.audit.audit_add(&settled.audit).await?;
        self.deliverer.wake();
        let requester: Identity = match decided.requester.parse() {
            Ok(i) => i,
            Err(_) => return Ok(Verdict::drop(format!("approval {} has a bad requester", row.id))),
        };
        let Some(user) = self.access.user_for(&*self.store.users, &requester).await? else {
            return Ok(Verdict::drop(format!("{requester} may no longer use Butler")));
        };
        let pending_left = self.store.approvals.approvals_pending(&decided.session_id).await?.len();
        let Ok(conversation) = decided.conversation.parse::<ConversationRef>() else {
            return Ok(Verdict::drop(format!("approval {} has a bad conversation", row.id)));
        };
        let kind =
            if decided.session_key.starts_with("group:") { ConversationKind::Group } else { ConversationKind::Direct };
        let reason = format!("{} {} by {by}", decided.tool, status.as_str());
        let key = decided.session_key.clone();
        // An expiry resumes the turn as the person it serves (not as Butler's own system
        // identity), so a question asked later in that turn is asked of them.
        let actor = if event.actor.identity.channel == SYSTEM_CHANNEL {
            Actor { identity: requester, display_name: user.display_name.clone(), is_bot: false }
        } else {
            event.actor.clone()
        };
        Ok(Verdict::recorded(
            Decision::Session {
                key,
                job: Box::new(Job {
                    event: InboundEvent { conversation, kind, actor, ..event.clone() },
                    user,
                    kind: JobKind::Resume { approval: Box::new(decided), pending_left },
                    attempt: 1,
                    quiet: false,
                }),
            },
            "approval",
            reason,
        ))
    }
}
