//! The approval rules shared by the agent (which asks) and triage (which takes the answer):
//! approval ids, the hash of a call's exact arguments, the outbox key of an approval's message
//! (its text is made in `notice.rs`), the text it becomes once answered, the audit row of a decision, who may decide, and what a typed reply answers; and
//! [`decide`], all of that applied to one answer (a click, a typed answer, a cancel).
//!
//! These are pure functions over store rows: nothing here may read or write the store, send a
//! message or run a tool.

use crate::clock::now_ms;
use crate::store::{ApprovalDecision, ApprovalKind, ApprovalRow, ApprovalStatus, AuditRow, UserRow};
use sha2::{Digest, Sha256};

/// 128 random bits as 32 hex characters.
pub(crate) fn approval_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// SHA-256 (hex) of a call's exact argument text.
pub fn args_hash(arguments: &str) -> String {
    hex::encode(Sha256::digest(arguments.as_bytes()))
}

/// The outbox key of an approval's message.
pub(crate) fn approval_key(id: &str) -> String {
    format!("approval:{id}")
}

/// What a typed reply to a question answers: a number picks that option (1-based), any other
/// text is the answer itself (trimmed). Leading mentions (`@butler`, Slack's and Discord's
/// `<@U1>`: how a group addresses Butler) are not part of the answer.
pub(crate) fn typed_answer(row: &ApprovalRow, text: &str) -> String {
    let mut text = text.trim();
    while let Some(first) = text.split_whitespace().next() {
        let mention = first.len() > 1 && first.starts_with('@') || first.starts_with("<@") && first.ends_with('>');
        if !mention || first.len() == text.len() {
            break;
        }
        text = text[first.len()..].trim_start();
    }
    match text.parse::<usize>() {
        Ok(n) if (1..=row.options.len()).contains(&n) => row.options[n - 1].clone(),
        _ => text.to_string(),
    }
}

/// The text a question's message becomes once decided with `answer`.
pub(crate) fn answered_text(row: &ApprovalRow, status: ApprovalStatus, answer: Option<&str>, by: &str) -> String {
    let question = format!("❓ {}", row.summary);
    match status {
        ApprovalStatus::Approved => format!(
            "{question}
💬 {by}: {}",
            answer.unwrap_or_default()
        ),
        ApprovalStatus::Denied => format!(
            "{question}
🚫 {by} declined to answer."
        ),
        ApprovalStatus::Expired => format!(
            "{question}
⌛ No answer in time."
        ),
        ApprovalStatus::Cancelled => format!(
            "{question}
⏹ Cancelled by {by}."
        ),
        ApprovalStatus::Pending => question,
    }
}

/// The text an answered approval's message becomes.
pub(crate) fn outcome_text(row: &ApprovalRow, status: ApprovalStatus, scope: Option<&str>, by: &str) -> String {
    if row.kind == ApprovalKind::Question {
        return answered_text(row, status, row.answer.as_deref(), by);
    }
    match (status, scope) {
        (ApprovalStatus::Approved, Some("session")) => {
            format!(
                "✅ Approved for this session by {by}: {} (and `{}` from now on in this session).",
                row.summary, row.tool
            )
        }
        (ApprovalStatus::Approved, _) => format!("✅ Approved by {by}: {}.", row.summary),
        (ApprovalStatus::Denied, _) => format!("🚫 Denied by {by}: {}.", row.summary),
        (ApprovalStatus::Expired, _) => format!("⌛ Expired without an answer: {}.", row.summary),
        (ApprovalStatus::Cancelled, _) => format!("⏹ Cancelled by {by}: {}.", row.summary),
        (ApprovalStatus::Pending, _) => row.summary.clone(),
    }
}

/// The record of a person's decision (or an expiry) on an approval.
pub(crate) fn decision_audit(row: &ApprovalRow, status: ApprovalStatus, scope: Option<&str>, by: &str) -> AuditRow {
    let outcome = match (status, scope) {
        (ApprovalStatus::Approved, _) if row.kind == ApprovalKind::Question => "answered",
        (ApprovalStatus::Approved, Some("session")) => "approved_session",
        (ApprovalStatus::Approved, _) => "approved",
        (ApprovalStatus::Denied, _) => "rejected",
        (ApprovalStatus::Expired, _) => "expired",
        (ApprovalStatus::Cancelled, _) => "cancelled",
        (ApprovalStatus::Pending, _) => "asked",
    };
    AuditRow {
        at_ms: now_ms(),
        actor: by.to_string(),
        user_id: row.requester_user.clone(),
        session_id: row.session_id.clone(),
        tool: row.tool.clone(),
        args_hash: row.args_hash.clone(),
        outcome: outcome.to_string(),
        reason: match row.kind {
            ApprovalKind::Tool => format!("approval {}", row.id),
            ApprovalKind::Question => format!("question {}", row.id),
        },
    }
}

/// Whether `user` (speaking as `identity`) may decide `row`.
pub(crate) fn may_decide(row: &ApprovalRow, identity: &str, user: Option<&UserRow>) -> bool {
    row.approvers.iter().any(|a| match a.as_str() {
        "requester" => user.is_some_and(|u| u.id == row.requester_user),
        spec => match spec.split_once(':') {
            Some(("role", role)) => user.is_some_and(|u| u.role.as_str() == role),
            Some(("user", id)) => user.is_some_and(|u| u.id == id),
            _ => spec == identity,
        },
    })
}

/// An answer to an approval request or a question.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Answer<'a> {
    /// A button or `/approve` / `/deny`: `once`, `session`, `deny`, a question's option index,
    /// or `expire` (Butler's own, when nobody answered in time).
    Choice(&'a str),
    /// A message answering a question (a number picks that option).
    Typed(&'a str),
    /// `/stop` while the turn waits.
    Cancel,
}

/// Who answers.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Answerer<'a> {
    /// `channel:id`.
    pub identity: &'a str,
    /// Their user, if they may use Butler.
    pub user: Option<&'a UserRow>,
    /// Their name as the edited message shows it.
    pub name: &'a str,
    /// Butler itself (an expiry).
    pub system: bool,
}

/// An answer that decides the request: what to store (a compare-and-swap from `pending`) and
/// what to audit.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Settled {
    pub decision: ApprovalDecision,
    pub audit: AuditRow,
}

/// An answer that decides nothing: the short reply, and the reason recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refused {
    pub text: String,
    pub reason: String,
}

fn refuse(text: impl Into<String>, reason: impl Into<String>) -> Refused {
    Refused { text: text.into(), reason: reason.into() }
}

/// What `answer` by `who` does to `row` at `now_ms`: the decision (status, scope, answer, the
/// edited message, who decided) and its audit row, or why it is refused. A choice is checked
/// (Butler's own expiry only from Butler, the request still pending, the choice fits its kind,
/// `who` may decide it unless it has expired); a typed answer or a cancel comes for a request
/// already found pending and waiting for `who`.
pub(crate) fn decide(
    row: &ApprovalRow,
    answer: Answer<'_>,
    who: &Answerer<'_>,
    now_ms: i64,
) -> Result<Settled, Refused> {
    let (status, scope, text) = match answer {
        Answer::Typed(text) => (ApprovalStatus::Approved, None, Some(typed_answer(row, text))),
        Answer::Cancel => (ApprovalStatus::Cancelled, None, None),
        Answer::Choice(choice) => choose(row, choice, who, now_ms)?,
    };
    let by = if who.system { "nobody" } else { who.name };
    let message = match row.kind {
        ApprovalKind::Tool => outcome_text(row, status, scope, by),
        ApprovalKind::Question => answered_text(row, status, text.as_deref(), by),
    };
    let audit = decision_audit(row, status, scope, by);
    let decision = ApprovalDecision {
        status,
        scope: scope.map(str::to_string),
        decided_by: by.to_string(),
        message,
        answer: text,
    };
    Ok(Settled { decision, audit })
}

/// The status, scope and answer a choice stands for, once it passes the checks of [`decide`].
fn choose(
    row: &ApprovalRow,
    choice: &str,
    who: &Answerer<'_>,
    now_ms: i64,
) -> Result<(ApprovalStatus, Option<&'static str>, Option<String>), Refused> {
    let (id, identity) = (&row.id, who.identity);
    if choice == "expire" && !who.system {
        return Err(refuse("That button is not valid.", format!("forged expiry from {identity}")));
    }
    if row.status != ApprovalStatus::Pending {
        let by = row.decided_by.as_deref().map(|b| format!(" by {b}")).unwrap_or_default();
        let text = format!("This request was already answered ({}{by}).", row.status.as_str());
        return Err(refuse(text, format!("{identity} answered decided approval {id}")));
    }
    let decided = match (row.kind, choice) {
        _ if choice == "expire" || now_ms >= row.expires_ms => (ApprovalStatus::Expired, None, None),
        (ApprovalKind::Tool, "once") => (ApprovalStatus::Approved, Some("once"), None),
        (ApprovalKind::Tool, "session") => (ApprovalStatus::Approved, Some("session"), None),
        (ApprovalKind::Tool, "deny") => (ApprovalStatus::Denied, None, None),
        (ApprovalKind::Question, "once" | "session" | "deny") => {
            let text = "That is a question: pick an option or reply with your answer.";
            return Err(refuse(text, format!("{identity} approved or denied question {id}")));
        }
        (ApprovalKind::Question, n) => match n.parse::<usize>().ok().and_then(|n| row.options.get(n)) {
            Some(option) => (ApprovalStatus::Approved, None, Some(option.clone())),
            None => return Err(refuse("That button is not valid.", format!("unknown option from {identity}"))),
        },
        _ => return Err(refuse("That button is not valid.", format!("unknown approval choice from {identity}"))),
    };
    if decided.0 != ApprovalStatus::Expired && !may_decide(row, identity, who.user) {
        let text = match row.kind {
            ApprovalKind::Tool => format!("Sorry, only {} can answer this request.", approvers_in_words(row)),
            ApprovalKind::Question => format!("Sorry, this question is for {}.", row.requester),
        };
        return Err(refuse(text, format!("{identity} may not decide approval {id}")));
    }
    Ok(decided)
}

/// Who may answer `row`, in words.
fn approvers_in_words(row: &ApprovalRow) -> String {
    let words: Vec<String> = row
        .approvers
        .iter()
        .map(|a| match a.as_str() {
            "requester" => format!("the person who asked ({})", row.requester),
            "role:owner" => "an owner".to_string(),
            other => format!("`{other}`"),
        })
        .collect();
    words.join(" or ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permissions::notice::{approval_notice, Room};
    use crate::store::UserRole;

    fn room(buttons: bool) -> Room {
        Room { buttons, max_len: 4_096, whole: false }
    }

    fn row(approvers: &[&str]) -> ApprovalRow {
        ApprovalRow {
            id: approval_id(),
            args_hash: args_hash("{}"),
            approvers: approvers.iter().map(|s| s.to_string()).collect(),
            ..ApprovalRow::pending("shell", "web:c", ("web:alice", "u-alice"), "run `ls`")
        }
    }

    fn user(id: &str, role: UserRole) -> UserRow {
        UserRow { id: id.into(), display_name: None, role, timezone: "UTC".into(), created_ms: 0 }
    }

    #[test]
    fn who_may_decide_table() {
        let alice = user("u-alice", UserRole::Member);
        let bob = user("u-bob", UserRole::Member);
        let owner = user("u-owner", UserRole::Owner);
        let cases: Vec<(Vec<&str>, &str, Option<&UserRow>, bool)> = vec![
            (vec!["requester"], "web:alice", Some(&alice), true),
            (vec!["requester"], "web:bob", Some(&bob), false),
            (vec!["requester"], "web:eve", None, false),
            (vec!["role:owner"], "web:owner", Some(&owner), true),
            (vec!["role:owner"], "web:alice", Some(&alice), false),
            (vec!["user:u-bob"], "web:bob", Some(&bob), true),
            (vec!["slack:U1"], "slack:U1", None, true),
            (vec!["slack:U1"], "slack:U2", None, false),
            (vec!["requester", "role:owner"], "web:owner", Some(&owner), true),
        ];
        for (approvers, identity, u, want) in cases {
            assert_eq!(may_decide(&row(&approvers), identity, u), want, "{approvers:?} {identity}");
        }
    }

    #[test]
    fn ids_are_128_bits_and_buttons_fit_telegram() {
        let a = approval_id();
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, approval_id());
        let notice = approval_notice(&row(&["requester"]), "Alice", room(true)).message;
        for b in &notice.buttons {
            assert!(b.action.len() <= 64, "{}", b.action);
            assert!(!b.action.contains("ls"), "no arguments in callback data");
        }
        assert!(!notice.text.contains("/approve"));
        assert!(approval_notice(&row(&["requester"]), "Alice", room(false)).message.text.contains("/approve"));
    }

    fn question(options: &[&str]) -> ApprovalRow {
        ApprovalRow {
            id: "0123456789abcdef0123456789abcdef".into(),
            tool: "ask_user".into(),
            summary: "Tea or coffee?".into(),
            approvers: vec!["web:alice".into()],
            kind: ApprovalKind::Question,
            options: options.iter().map(|s| s.to_string()).collect(),
            ..row(&[])
        }
    }

    #[test]
    fn question_messages_table() {
        let id = "0123456789abcdef0123456789abcdef";
        // (options, channel has buttons) -> (text, buttons as label=action)
        let cases: Vec<(Vec<&str>, bool, &str, Vec<String>)> = vec![
            (
                vec!["Tea", "Coffee"],
                true,
                "❓ **Question for Alice**: Tea or coffee?\n_Pick one, or reply in your own words._",
                vec![format!("Tea=ap:{id}:0"), format!("Coffee=ap:{id}:1")],
            ),
            (
                vec!["Tea", "Coffee"],
                false,
                "❓ **Question for Alice**: Tea or coffee?\n1. Tea  2. Coffee - reply with a number or your own words",
                vec![],
            ),
            (vec![], true, "❓ **Question for Alice**: Tea or coffee?\n_Reply to answer._", vec![]),
            (vec![], false, "❓ **Question for Alice**: Tea or coffee?\n_Reply to answer._", vec![]),
        ];
        for (options, buttons, text, want) in cases {
            let notice = approval_notice(&question(&options), "Alice", room(buttons)).message;
            assert_eq!(notice.text, text, "{options:?} {buttons}");
            let got: Vec<String> = notice.buttons.iter().map(|b| format!("{}={}", b.label, b.action)).collect();
            assert_eq!(got, want, "{options:?} {buttons}");
            assert_eq!(notice.key, format!("approval:{id}"));
            assert!(notice.buttons.iter().all(|b| b.action.len() <= 64));
        }
        // Ten options: the callback data still fits Telegram's 64 bytes.
        let ten: Vec<String> = (0..10).map(|n| format!("option {n}")).collect();
        let ten: Vec<&str> = ten.iter().map(String::as_str).collect();
        let notice = approval_notice(&question(&ten), "Alice", room(true)).message;
        assert_eq!(notice.buttons.last().unwrap().action, format!("ap:{id}:9"));
    }

    #[test]
    fn question_outcomes_and_typed_answers_table() {
        let q = question(&["Tea", "Coffee"]);
        let cases = [
            (ApprovalStatus::Approved, Some("Coffee"), "❓ Tea or coffee?\n💬 Alice: Coffee"),
            (ApprovalStatus::Expired, None, "❓ Tea or coffee?\n⌛ No answer in time."),
            (ApprovalStatus::Cancelled, None, "❓ Tea or coffee?\n⏹ Cancelled by Alice."),
            (ApprovalStatus::Denied, None, "❓ Tea or coffee?\n🚫 Alice declined to answer."),
        ];
        for (status, answer, want) in cases {
            assert_eq!(answered_text(&q, status, answer, "Alice"), want);
        }
        let answered = ApprovalRow { answer: Some("Tea".into()), ..q.clone() };
        assert_eq!(
            outcome_text(&answered, ApprovalStatus::Approved, None, "Alice"),
            "❓ Tea or coffee?\n💬 Alice: Tea"
        );
        assert_eq!(decision_audit(&answered, ApprovalStatus::Approved, None, "Alice").outcome, "answered");
        let typed = [
            ("2", "Coffee"),
            (" 1 ", "Tea"),
            ("3", "3"),
            ("0", "0"),
            ("green tea, please", "green tea, please"),
            ("@butler 2", "Coffee"),
            ("<@U123> <@U9> mint tea", "mint tea"),
            ("@butler", "@butler"),
            ("tea for @bob", "tea for @bob"),
        ];
        for (text, want) in typed {
            assert_eq!(typed_answer(&q, text), want, "{text}");
        }
        assert_eq!(typed_answer(&question(&[]), "1"), "1");
    }

    #[test]
    fn decide_table() {
        let (alice, bob) = (user("u-alice", UserRole::Member), user("u-bob", UserRole::Member));
        let tool = row(&["requester"]);
        let done = ApprovalRow { status: ApprovalStatus::Denied, decided_by: Some("Bob".into()), ..tool.clone() };
        let q = question(&["Tea", "Coffee"]);
        let a = Answerer { identity: "web:alice", user: Some(&alice), name: "Alice", system: false };
        let b = Answerer { identity: "web:bob", user: Some(&bob), name: "Bob", system: false };
        let butler = Answerer { identity: "system:approvals", user: None, name: "Butler", system: true };
        let (early, late) = (1_000, 600_000);
        let (once, deny) = (Answer::Choice("once"), Answer::Choice("deny"));
        // (row, answer, who, now) -> "status scope answer audit-outcome decided-by", or the refusal.
        let cases: Vec<(&ApprovalRow, Answer, Answerer, i64, &str)> = vec![
            (&tool, once, a, early, "approved once - approved Alice"),
            (&tool, Answer::Choice("session"), a, early, "approved session - approved_session Alice"),
            (&tool, deny, a, early, "denied - - rejected Alice"),
            (&tool, once, a, late, "expired - - expired Alice"),
            (&tool, deny, b, late, "expired - - expired Bob"),
            (&tool, Answer::Choice("expire"), butler, early, "expired - - expired nobody"),
            (&tool, Answer::Cancel, b, early, "cancelled - - cancelled Bob"),
            (&q, Answer::Choice("1"), a, early, "approved - Coffee answered Alice"),
            (&q, Answer::Typed(" 1 "), a, early, "approved - Tea answered Alice"),
            (&q, Answer::Typed("mint"), a, early, "approved - mint answered Alice"),
            (&tool, once, b, early, "refused: Sorry, only the person who asked (web:alice) can answer this request."),
            (&tool, Answer::Choice("expire"), a, early, "refused: That button is not valid."),
            (&tool, Answer::Choice("always"), a, early, "refused: That button is not valid."),
            (&done, once, a, early, "refused: This request was already answered (denied by Bob)."),
            (
                &done,
                Answer::Choice("expire"),
                butler,
                late,
                "refused: This request was already answered (denied by Bob).",
            ),
            (&q, once, a, early, "refused: That is a question: pick an option or reply with your answer."),
            (&q, Answer::Choice("7"), a, early, "refused: That button is not valid."),
            (&q, Answer::Choice("0"), b, early, "refused: Sorry, this question is for web:alice."),
        ];
        for (row, answer, who, now, want) in cases {
            let got = match decide(row, answer, &who, now) {
                Err(no) => format!("refused: {}", no.text),
                Ok(Settled { decision: d, audit }) => {
                    let by = d.decided_by.as_str();
                    let message = match row.kind {
                        ApprovalKind::Tool => outcome_text(row, d.status, d.scope.as_deref(), by),
                        ApprovalKind::Question => answered_text(row, d.status, d.answer.as_deref(), by),
                    };
                    assert_eq!(d.message, message, "{answer:?} by {}", who.identity);
                    assert_eq!((audit.args_hash.as_str(), audit.actor.as_str()), (row.args_hash.as_str(), by));
                    let dash = |v: Option<&str>| v.unwrap_or("-").to_string();
                    let (scope, text) = (dash(d.scope.as_deref()), dash(d.answer.as_deref()));
                    format!("{} {scope} {text} {} {by}", d.status.as_str(), audit.outcome)
                }
            };
            assert_eq!(got, want, "{answer:?} by {} at {now}", who.identity);
        }
    }
}
