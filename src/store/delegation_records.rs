//! The rows of delegation: one [`DelegationRow`] per `delegate` call (a child agent, in the
//! foreground of its parent's turn or as a background task), its status and what it returned.
//!
//! Plain data: nothing here may run a query.

/// How a child agent stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DelegationStatus {
    /// Running (or, after a crash, left running by a dead process).
    Running,
    /// Parked on an approval or a question asked inside it.
    Waiting,
    /// Finished with an answer.
    Done,
    /// Stopped by a limit (iterations, time, budget): `result` is the partial answer.
    Stopped,
    /// The model or the store failed.
    Failed,
    /// A crash cut it off; reported once as interrupted, never re-run.
    Interrupted,
    /// `/stop` or `/cancel`.
    Cancelled,
}

impl DelegationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Waiting => "waiting",
            Self::Done => "done",
            Self::Stopped => "stopped",
            Self::Failed => "failed",
            Self::Interrupted => "interrupted",
            Self::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "running" => Self::Running,
            "waiting" => Self::Waiting,
            "done" => Self::Done,
            "stopped" => Self::Stopped,
            "failed" => Self::Failed,
            "interrupted" => Self::Interrupted,
            "cancelled" => Self::Cancelled,
            _ => return None,
        })
    }

    /// Still running or waiting: it may change again.
    pub fn is_open(self) -> bool {
        matches!(self, Self::Running | Self::Waiting)
    }
}

/// One child agent: the call that started it, its own session, what it ran on, how it ended.
#[derive(Clone, Debug, PartialEq)]
pub struct DelegationRow {
    /// The task id (`t-` and 10 random hex characters), shown by `/tasks` and taken by `/cancel`.
    pub id: String,
    pub parent_session_id: String,
    pub parent_call_id: String,
    /// The child's own session (its transcript).
    pub child_session_id: String,
    /// The session of the turn the whole tree started in (the user's conversation).
    pub root_session_id: String,
    pub user_id: String,
    /// Where the parent speaks (`channel:id[/thread]`).
    pub conversation: String,
    /// The conversation is a group chat (its events key sessions by chat, not by person).
    pub group_chat: bool,
    /// The identity the parent turn worked for (`channel:id`); a background result comes from it.
    pub requester: String,
    /// 1 for a child of a user's turn, 2 for its child, ...
    pub depth: i32,
    pub archetype: Option<String>,
    pub tier: String,
    pub model: String,
    pub tools: Vec<String>,
    pub task: String,
    pub background: bool,
    pub status: DelegationStatus,
    /// The final (or partial) answer.
    pub result: Option<String>,
    /// Why it ended other than with an answer (a limit, an error).
    pub reason: Option<String>,
    pub cost_usd: f64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub created_ms: i64,
    pub finished_ms: Option<i64>,
    /// A background task's result entered the parent's inbox at this time.
    pub delivered_ms: Option<i64>,
    /// The event id of the message whose tree (chain) started it: its turn, helpers, background
    /// tasks and the turns their reports start share one origin (empty for rows made before it
    /// was recorded). `/tasks` shows a chain as one entry.
    pub origin: String,
    /// The replica running it (its worker id): a background task whose replica is gone is
    /// reported as interrupted by the others' reaper. Empty on rows made before it was recorded.
    pub worker: String,
}

/// How a delegation moves on: its new status and, when it ends, what it returned and spent.
#[derive(Clone, Debug, PartialEq)]
pub struct DelegationUpdate {
    pub status: DelegationStatus,
    pub result: Option<String>,
    pub reason: Option<String>,
    pub cost_usd: f64,
    pub input_tokens: i64,
    pub output_tokens: i64,
}

impl DelegationUpdate {
    /// A move to `status` (an end, or back to running/waiting) that spends nothing more.
    pub fn to(status: DelegationStatus, result: Option<String>, reason: Option<&str>) -> Self {
        Self { status, result, reason: reason.map(str::to_string), cost_usd: 0.0, input_tokens: 0, output_tokens: 0 }
    }
}

/// Which delegations a listing wants, newest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DelegationFilter {
    pub root_session_id: Option<String>,
    pub user_id: Option<String>,
    /// Only `running` and `waiting` ones.
    pub open_only: bool,
    /// Only background tasks.
    pub background_only: bool,
    /// Only the chain of this originating message.
    pub origin: Option<String>,
    pub limit: usize,
}
