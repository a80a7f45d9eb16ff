//! The agent's side of a message's chain (`delegate::Chain`): the tree a conversation's own
//! turn starts (a new chain, or, for the turn a background report starts, the chain of the
//! message that started that task, so the report's turn counts against the same totals), the
//! worst-case cost a model call reserves, its admission under the person's day's limit, the
//! ending a refusal gives the turn, and whether a `delegate` call may start its helper (the
//! message's helper count, a background place).
//!
//! It must never call a model itself nor wait for anything but the chain's own calls and
//! the person's day ([`admit_day`], which reads the store's figure).

use super::budget::Budget;
use super::input::Tree;
use super::state::{Ending, Turn};
use super::stores::AgentStores;
use super::tasks::report_of;
use crate::config::{AgentConfig, LimitsConfig};
use crate::delegate::{BackgroundSlot, Caps, Chain, DayGate, DayTicket, Days, Refusal, Running, Ticket, Totals};
use crate::llm::{Prices, Usage};
use crate::store::{StoreError, TurnStore, UserRow};
use butler_channel::InboundEvent;
use std::sync::Arc;

/// What the tree of a conversation's own turn is made from.
pub(super) struct RootParts<'a> {
    pub limits: &'a LimitsConfig,
    pub caps: Caps,
    pub running: &'a Running,
}

/// The tree of a conversation's own turn for `event` in session `session_key`: the chain of
/// the message whose background task `event` reports on (live in this process, or rebuilt from
/// the totals the report carries), else a new chain for `event` itself.
pub(super) fn root_tree(parts: RootParts<'_>, event: &InboundEvent, session_key: &str) -> Tree {
    let report = report_of(event);
    let background = report.is_some();
    let chain = match report {
        Some(report) if !report.origin.is_empty() => match parts.running.chains().adopt(&report.origin, &report.task) {
            Some(chain) => chain,
            None => Chain::new(&report.origin, session_key, parts.caps, report.totals.unwrap_or_default()),
        },
        _ => Chain::new(&event.id.0, session_key, parts.caps, Totals::default()),
    };
    let budget = Budget::new(parts.limits);
    Tree { depth: 0, root_session: None, chain, budget, background }
}

/// A report whose chain was halted (`/stop`, `/cancel`): its turn ends without a model call
/// and without a reply.
pub(super) fn halted_report(event: &InboundEvent, tree: &Tree) -> bool {
    tree.depth == 0 && report_of(event).is_some() && tree.chain.halted().is_some()
}

/// The most a model call on a model priced `prices` may cost: the request's estimated tokens
/// at the dearer of the input and cache-write prices, and every output token it may write.
pub(super) fn worst_case(prices: &Prices, context_tokens: usize, max_tokens: u32) -> f64 {
    let input = Prices { input: prices.input.max(prices.cache_write), ..*prices };
    let usage = Usage { input_tokens: context_tokens as u64, output_tokens: max_tokens as u64, ..Usage::default() };
    input.cost(&usage)
}

/// Admits one model call of `user` whose worst case is `worst` under the day's limit `cap`:
/// the store's figure for their day (in their zone) read fresh, plus what this process has not
/// committed yet; waits while calls running now might reach the limit. `Err`: the limit is
/// reached, with the day's spend. Cancel-safe.
async fn admit_day(
    days: &Arc<Days>,
    turns: &dyn TurnStore,
    user: &UserRow,
    cap: f64,
    worst: f64,
) -> Result<Result<DayTicket, f64>, StoreError> {
    let since = crate::usage::day_start_ms(&user.timezone, crate::clock::now_ms());
    loop {
        let changed = days.changed();
        tokio::pin!(changed);
        changed.as_mut().enable();
        let epoch = days.epoch(&user.id);
        let recorded = turns.usage_since(&user.id, since).await?.cost_usd;
        match days.try_admit(&user.id, epoch, recorded, cap, worst) {
            DayGate::Go(ticket) => return Ok(Ok(ticket)),
            DayGate::No(today) => {
                tracing::info!(user = %user.id, today, cap, "model call refused: the day's limit is reached");
                return Ok(Err(today));
            }
            DayGate::Retry => {}
            DayGate::Wait => changed.await,
        }
    }
}

/// What a model call is admitted under: the person's day (this process's ledger and the
/// store's figure), the chain's cap and the call's worst case.
pub(super) struct Admission<'a> {
    pub days: &'a Arc<Days>,
    pub turns: &'a dyn TurnStore,
    pub cap: Option<f64>,
    pub worst: f64,
}

/// A model call admitted by its chain and, with a day's limit, by the person's day.
pub(super) struct Admitted {
    chain: Ticket,
    day: Option<DayTicket>,
}

impl Admitted {
    /// The call cost `usd`.
    pub(super) fn settle(self, usd: f64) {
        self.chain.settle(usd);
        if let Some(day) = self.day {
            day.settle(usd);
        }
    }
}

/// Admits the next model call of `turn`: its chain (counted, its worst case reserved), then
/// the person's day; `Err` is how the turn ends instead (a limit, `/stop`, shutdown).
pub(super) async fn admit_call(turn: &Turn<'_>, a: Admission<'_>) -> Result<Result<Admitted, Ending>, StoreError> {
    let admitted = tokio::select! {
        r = turn.tree.chain.admit(a.worst, a.cap, turn.tree.background) => r,
        _ = turn.stop.cancelled() => return Ok(Err(Ending::Stopped)),
        _ = turn.abort.cancelled() => return Ok(Err(Ending::Parked)),
    };
    let chain = match admitted {
        Ok(t) => t,
        Err(r) => return Ok(Err(refused(&turn.tree, r))),
    };
    let Some(cap) = turn.tree.budget.per_day else { return Ok(Ok(Admitted { chain, day: None })) };
    // The person's day: the store's figure now, and what this process has not committed.
    let day = tokio::select! {
        r = admit_day(a.days, a.turns, turn.user, cap, a.worst) => r?,
        _ = turn.stop.cancelled() => return Ok(Err(Ending::Stopped)),
        _ = turn.abort.cancelled() => return Ok(Err(Ending::Parked)),
    };
    Ok(match day {
        Ok(day) => Ok(Admitted { chain, day: Some(day) }),
        Err(today) => Err(Ending::Budget(turn.tree.budget.day_reached(today, &turn.user.timezone))),
    })
}

/// How a turn ends when its chain refuses a model call.
pub(super) fn refused(tree: &Tree, refusal: Refusal) -> Ending {
    tracing::info!(origin = %tree.chain.origin(), depth = tree.depth, refusal = ?refusal, "model call refused");
    match refusal {
        Refusal::Halted(_) => Ending::Stopped,
        Refusal::Usd(spent) => Ending::Budget(tree.budget.exceeded(spent).unwrap_or_else(|| refusal.message())),
        r => Ending::Budget(r.message()),
    }
}

/// Whether a `delegate` call of `tree`'s turn for user `user_id` may start its helper: for a
/// background one a place of the user's `max_background` first (taken atomically here; the
/// store also counts other replicas' tasks), then one of the message's helpers. `Err` is the
/// call's refusal.
pub(super) async fn admit_helper(
    running: &std::sync::Arc<Running>,
    store: &AgentStores,
    cfg: &AgentConfig,
    (tree, user_id): (&Tree, &str),
    background: bool,
) -> Result<Result<Option<BackgroundSlot>, String>, StoreError> {
    let slot = if background {
        let max = cfg.delegation.max_background;
        let busy = format!(
            "not started: {max} background tasks are running already ([agent.delegation] max_background); wait \
             for one or /cancel it"
        );
        let Some(slot) = running.background_slot(user_id, max) else { return Ok(Err(busy)) };
        let filter = crate::store::DelegationFilter {
            user_id: Some(user_id.to_string()),
            open_only: true,
            background_only: true,
            limit: max + 1,
            ..Default::default()
        };
        if store.delegations.delegations_list(&filter).await?.len() >= max {
            return Ok(Err(busy));
        }
        Some(slot)
    } else {
        None
    };
    Ok(match tree.chain.start_helper(tree.background || background) {
        Ok(()) => Ok(slot),
        Err(Refusal::Halted(by)) => Err(format!("not started: this request was stopped ({by})")),
        Err(r) => Err(r.message()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_case_prices_every_output_token_and_the_dearer_input() {
        let p = |input, output, cache_write| Prices { input, output, cache_read: 0.0, cache_write };
        // (prices per Mtok, request tokens, max output tokens) -> dollars
        let cases = [
            (p(0.0, 0.0, 0.0), 1000, 1000, 0.0),
            (p(3.0, 15.0, 0.0), 1_000_000, 0, 3.0),
            (p(3.0, 15.0, 3.75), 1_000_000, 100_000, 3.75 + 1.5),
        ];
        for (prices, tokens, max, want) in cases {
            let got = worst_case(&prices, tokens, max);
            assert!((got - want).abs() < 1e-9, "{prices:?} {tokens} {max}: {got}");
        }
    }
}
